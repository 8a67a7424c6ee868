"""The tolerance families as registered and their factory (:func:`build`, the registry's target
for every family of :class:`~trex_eval.grading.objective.tolerance.ToleranceRule`): each family's
title, default :class:`~trex_eval.grading.objective.tolerance.Tolerance`, primary key and the
peer's source file, and the canonical text of a rule's parameters. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from trex_eval.errors import ConfigError
from trex_eval.grading.objective.comparison import Tolerance
from trex_eval.grading.objective.tolerance import ToleranceRule
from trex_eval.grading.spec import RuleSpec


@dataclass(frozen=True)
class _Preset:
    """A tolerance family as registered: its title, defaults and primary key (``None``: no bare
    value; a family with a primary key requires it)."""

    title: str
    defaults: Tolerance
    primary: str | None = None
    source: str = ""


# The peers' own evaluators, at the commit they were read at (the benchmark data are pinned in
# trex_eval/benchmarks/data_manifest.json; these files are not benchmark data).
OPTMATH_SOURCE = "optsuite/OptMATH@b797149 eval/executor.py (ResultEvaluator.evaluate_result)"
MAMO_SOURCE = (
    "FreedomIntelligence/Mamo@5da0854 scripts/scripts_optimization/mamo_script_optimization/"
    "3.run_code_comp_optimization.py (compare_output_with_standard)"
)
ORTHOUGHT_SOURCE = "ZJU-TSELab/ORThought@ce5dc6b analyze.py (compare_results)"

PRESETS: Mapping[str, _Preset] = MappingProxyType(
    {
        "strict": _Preset("strict", Tolerance()),
        "rel": _Preset("relative", Tolerance(rtol=0.0, atol=0.0), primary="rtol"),
        "abs": _Preset("absolute", Tolerance(rtol=0.0, atol=0.0), primary="atol"),
        "round": _Preset("rounded", Tolerance(rtol=0.0, atol=0.0), primary="digits"),
        "orlm": _Preset("ORLM convention", Tolerance(rtol=0.05, atol=0.0, digits=0)),
        "sirl": _Preset("SIRL convention |Δ|/(|ref|+1)", Tolerance(rtol=1e-6, atol=1e-6)),
        # OptMATH: round(gt), round(pred), |Δ| / |gt| ≤ 0.05 (|pred| ≤ 0.05 for gt 0: the same).
        # Its evaluator's conversion fallback (re-running the program with variable types,
        # strict inequalities or the sense rewritten) is opt-in here: fallback=true.
        "optmath": _Preset(
            "OptMATH convention", Tolerance(rtol=0.05, atol=0.0, digits=0), source=OPTMATH_SOURCE
        ),
        "mamo": _Preset(
            "Mamo convention", Tolerance(rtol=1e-4, atol=0.0, label_digits=2), source=MAMO_SOURCE
        ),
        "orthought": _Preset(
            "ORThought convention", Tolerance(rtol=0.0, atol=0.01, exclusive=True), source=ORTHOUGHT_SOURCE
        ),
    }
)
"""The tolerance families of :mod:`trex_eval.grading.registry`, by name."""

_KEYS = ("rtol", "atol", "digits", "printed", "unverified", "fallback")
_FALLBACK_FAMILIES = frozenset({"optmath"})
"""The families whose peer has a conversion fallback (key ``fallback``)."""


def build(spec: RuleSpec) -> ToleranceRule:
    """The registry factory of every tolerance family (keys ``rtol``, ``atol``, ``digits``,
    ``printed``, ``unverified``, and ``fallback`` for ``optmath``; a bare first value is the
    family's primary key).

    Raises:
        ConfigError: a family without a preset, a missing primary value, a bad parameter, or
            ``fallback`` for a family without one.
    """
    preset = PRESETS.get(spec.name)
    if preset is None:
        raise ConfigError(f"{spec.name!r} is not a tolerance rule", where=spec.text)
    values = spec.values(primary=preset.primary, allowed=_KEYS)
    if preset.primary is not None and preset.primary not in values:
        raise ConfigError(
            f"rule {spec.name!r} needs its {preset.primary} value",
            where=spec.text,
            hint=f"e.g. {spec.name}:{'2' if preset.primary == 'digits' else '1e-4'}",
        )
    defaults = preset.defaults
    # replace(): a preset's own tests (exclusive bound, label decimals) are kept.
    tolerance = replace(
        defaults,
        rtol=spec.number("rtol", values["rtol"]) if "rtol" in values else defaults.rtol,
        atol=spec.number("atol", values["atol"]) if "atol" in values else defaults.atol,
        digits=spec.integer("digits", values["digits"]) if "digits" in values else defaults.digits,
    )
    printed = spec.flag("printed", values["printed"]) if "printed" in values else False
    trusting = spec.flag("unverified", values["unverified"]) if "unverified" in values else False
    if trusting and spec.name == "strict":
        raise ConfigError(
            "strict never counts an unverified claim as correct",
            where=spec.text,
            hint="use another family for a convention that trusts the solver, e.g. rel:1e-4,unverified=true",
        )
    fallback = spec.flag("fallback", values["fallback"]) if "fallback" in values else False
    if "fallback" in values and spec.name not in _FALLBACK_FAMILIES:
        raise ConfigError(
            f"rule {spec.name!r} has no conversion fallback",
            where=spec.text,
            hint="fallback=true is OptMATH's: use optmath:fallback=true",
        )
    return ToleranceRule(
        name=spec.name,
        tolerance=tolerance,
        use_printed=printed,
        count_unverified=trusting,
        title=preset.title,
        source=preset.source,
        conversion_fallback=fallback,
        parameters=_canonical(
            tolerance, printed=printed, trusting=trusting, fallback=fallback, preset=preset
        ),
    )


def _canonical(
    tolerance: Tolerance, *, printed: bool, trusting: bool, fallback: bool, preset: _Preset
) -> str:
    """``key=value`` text of the parameters that differ from the preset (its primary always)."""
    shown: list[str] = []
    defaults = preset.defaults
    if preset.primary == "rtol" or tolerance.rtol != defaults.rtol:
        shown.append(f"rtol={tolerance.rtol!r}")
    if preset.primary == "atol" or tolerance.atol != defaults.atol:
        shown.append(f"atol={tolerance.atol!r}")
    if preset.primary == "digits" or tolerance.digits != defaults.digits:
        shown.append(f"digits={tolerance.digits}")
    if printed:
        shown.append("printed=true")
    if trusting:
        shown.append("unverified=true")
    if fallback:
        shown.append("fallback=true")
    return ",".join(shown)
