"""What a run is, in two parts: :class:`RunSpec` (what defines its results: stored, as the
resolved :class:`~trex_eval.store.RunSettings`, in the manifest and compared on resume) and
:class:`RunOptions` (how this process runs it: where, how many programs at once, what it prints).

A spec becomes settings once, when the run starts (:func:`trex_eval.run.pipeline.prepare`); the
only way back is :meth:`RunSpec.from_settings`, which re-asks for a recorded run to resume or
re-grade it; :func:`settings_diff` says how recorded settings differ from the ones asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.grading.registry import superseded
from trex_eval.protocols import DEFAULT_PROTOCOL, get_protocol
from trex_eval.records import FewShotStrategy, GurobiPolicy
from trex_eval.sandbox import SandboxLimits
from trex_eval.store import RepairFeedbackMode, RunSettings

ALL_BENCHMARKS = ("nl4opt", "optibench", "b4o-feasible", "b4o-orgeval")


@dataclass(frozen=True)
class FewShotSettings:
    """``k`` examples per prompt, chosen by ``strategy`` from ``source``: ``"reference"`` (the
    benchmark's own reference programs) or a run directory (its correct samples)."""

    k: int = 0
    strategy: FewShotStrategy = "random"
    source: str = "reference"


@dataclass(frozen=True)
class RepairSettings:
    """The repair protocol (``run --repair N``): after a sample's program ran, an outcome the
    protocol repairs (see :func:`trex_eval.run.repair.repair_need`) is fed back and the model asked
    again, up to ``rounds`` times; ``feedback`` says what the feedback may reveal
    (:data:`~trex_eval.store.RepairFeedbackMode`). ``rounds = 0`` is the zero-shot protocol."""

    rounds: int = 0
    feedback: RepairFeedbackMode = "execution"


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run's results.

    ``rules`` overrides grading rules by kind: each spec applies to the benchmarks of its rule's
    kind (objective or structure); ``rules_by_benchmark`` (benchmark as requested -> rule spec)
    takes precedence, which is how a resumed run keeps each benchmark's own rule. ``extractor``
    overrides the protocol's extractor; ``limits`` the protocol's sandbox limits. ``samples``
    completions per problem use seeds ``seed + i``; ``limit`` keeps the first n problems;
    ``problem_ids`` (benchmark as requested -> ids) keeps only those problems, in benchmark order.
    ``repair`` is the repair protocol (default: none, zero-shot).
    """

    model: BackendSpec
    benchmarks: tuple[str, ...] = ALL_BENCHMARKS
    prompt_set: str = "t-rex"
    samples: int = 1
    limit: int | None = None
    protocol: str = DEFAULT_PROTOCOL
    rules: tuple[str, ...] = ()
    rules_by_benchmark: Mapping[str, str] = field(default_factory=dict)
    extractor: str | None = None
    few_shot: FewShotSettings = FewShotSettings()
    limits: SandboxLimits | None = None
    gurobi: GurobiPolicy = "auto"
    problem_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    repair: RepairSettings = RepairSettings()

    def __post_init__(self) -> None:
        # A suite name (``sirl``, ``orlm``, ``all``) stands for its members (benchmarks.suites).
        from trex_eval.benchmarks.suites import expand

        object.__setattr__(self, "benchmarks", expand(self.benchmarks))

    @classmethod
    def from_settings(
        cls,
        settings: RunSettings,
        *,
        model: BackendSpec | None = None,
        protocol: str | None = None,
        rules: tuple[str, ...] = (),
    ) -> RunSpec:
        """The spec that reproduces a recorded run: resume it, or re-grade its completions
        (another ``model`` = a replay of them, possibly another ``protocol`` or ``rules``; each
        benchmark keeps its recorded rule unless those change)."""
        same_grading = protocol in (None, settings.protocol) and not rules
        return cls(
            model=model or settings.model,
            benchmarks=tuple(b.requested for b in settings.benchmarks),
            prompt_set=settings.prompt_set,
            samples=settings.samples,
            limit=settings.limit,
            protocol=protocol or settings.protocol,
            rules=rules,
            rules_by_benchmark={b.requested: b.rule for b in settings.benchmarks} if same_grading else {},
            extractor=settings.extractor,
            few_shot=FewShotSettings(
                k=settings.few_shot,
                strategy=settings.few_shot_strategy,
                source=settings.few_shot_source or "reference",
            ),
            limits=settings.limits,
            gurobi=settings.gurobi,
            problem_ids={
                b.requested: b.problem_ids for b in settings.benchmarks if b.problem_ids is not None
            },
            repair=RepairSettings(rounds=settings.repair, feedback=settings.repair_feedback),
        )


@dataclass(frozen=True)
class RayOptions:
    """Grading on a Ray cluster (``run``/``grade``/``audit --ray-address``;
    :mod:`trex_eval.run.ray_grading`). ``address``: what ``ray.init`` is given (``auto``, a GCS
    address ``host:port``, ``ray://host:port``, or ``local`` to start a Ray instance on this machine
    for the run); ``actors``: grading actors (``None``: one per alive node), each with
    ``RunOptions.workers`` sandbox lanes; ``cpus_per_actor``: the CPUs each actor reserves from
    Ray's scheduler. Where a sample is graded never changes its grade."""

    address: str
    actors: int | None = None
    cpus_per_actor: float = 1.0


@dataclass(frozen=True)
class RunOptions:
    """How this process runs a spec; none of it changes a result.

    ``data_dir`` is the T-Rex data directory (``None`` when no benchmark reads it); ``out`` the
    run directory (default ``results/<run-id>``); ``workers`` programs execute at once under
    ``isolation`` (``auto``, or a level of :mod:`trex_eval.sandbox.isolation`); ``command`` is
    recorded in the manifest; ``show_progress`` draws progress bars on stderr (periodic plain
    lines when stderr is not a terminal). ``reuse_executions`` names a run directory whose stored
    executions are taken instead of running a program again, wherever the program and everything
    its job depends on (protocol, extractor, limits, gurobi policy, data) are the same.
    ``diagnose`` stores on each failing sample's grade why it failed
    (:meth:`~trex_eval.protocols.plan.EvaluationPlan.diagnosed`; a verdict never changes).
    ``keep_records`` returns the run's sample records with the result
    (:attr:`~trex_eval.run.pipeline.RunResult.records`): the session keeps each record as it
    stored it (and those of earlier sessions, read at its start) instead of reading
    ``samples.jsonl`` back when it finishes, so memory holds every record for the whole run.
    ``ray`` grades on a Ray actor pool instead of this process's sandbox pool (:class:`RayOptions`;
    ``None``: here); generation, storage and resume stay in this process.
    """

    data_dir: Path | None = None
    out: Path | None = None
    workers: int = 2
    isolation: str = "auto"
    command: tuple[str, ...] = ()
    show_progress: bool = True
    reuse_executions: Path | None = None
    diagnose: bool = True
    keep_records: bool = False
    ray: RayOptions | None = None


def model_for_protocol(model: BackendSpec, protocol: str) -> tuple[BackendSpec, str | None]:
    """``model`` with the options the protocol needs from the embedded ``reference`` backend
    (options the user set win), and a note saying what was added (``None``: nothing)."""
    needed = get_protocol(protocol).reference_options
    if model.backend != "reference":
        return model, None
    added = {k: v for k, v in needed.items() if k not in model.options}
    if not added:
        return model, None
    note = ", ".join(f"{k}={v}" for k, v in added.items())
    updated = model.model_copy(update={"options": {**model.options, **added}})
    return updated, f"--protocol {protocol}: the reference backend answers with {note}"


__all__ = [
    "ALL_BENCHMARKS",
    "FewShotSettings",
    "RayOptions",
    "RepairSettings",
    "RunOptions",
    "RunSpec",
    "model_for_protocol",
]


def settings_diff(old: RunSettings, new: RunSettings) -> str:
    """The settings that differ, each as its dotted field name with the recorded and the new value
    (``model.options.base_url was 'http://a', now 'http://b'``), at most three."""
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    changes: list[str] = []
    if len(a["benchmarks"]) == len(b["benchmarks"]):
        for x, y in zip(a.pop("benchmarks"), b.pop("benchmarks"), strict=True):
            _diff(x, y, f"benchmark {x['name']}: ", changes)
    _diff(a, b, "", changes)
    shown = "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")
    return shown or "the settings differ"


def _diff(old: object, new: object, path: str, changes: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in dict.fromkeys([*old, *new]):
            _diff(
                old.get(key),
                new.get(key),
                f"{path}{'.' if path and not path.endswith(' ') else ''}{key}",
                changes,
            )
    elif old != new:
        changes.append(f"{path} was {_short(old)}, now {_short(new)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class SupersededRule:
    """A benchmark of a stored run graded under a rule version this trex-eval no longer
    implements: the benchmark, the rule as recorded, the rule as it is now."""

    benchmark: str
    recorded: str
    current: str


def superseded_rule(settings: RunSettings) -> SupersededRule | None:
    """The first benchmark of ``settings`` whose rule version is superseded, or None."""
    for entry in settings.benchmarks:
        current = superseded(entry.rule)
        if current is not None:
            return SupersededRule(entry.name, entry.rule, current)
    return None
