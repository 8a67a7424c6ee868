"""Execution conventions of the field's harnesses as named, versioned options of a protocol.

A peer's harness is stated in one ``--protocol`` text: a registered base protocol and options,
``orlm+after-solve`` or ``default+rule=rel:0.05+preload=pulp+after-solve+zero-band=0.05
+no-best-solution``. :mod:`.spec` is the grammar and the option registry (imports no protocol);
:mod:`.protocol` the composed :class:`~trex_eval.protocols.base.Protocol` (the job's preload, the
rule option); :mod:`.rule` the options that change a verdict, around the objective rule. No
option is a default; the canonical text (with every option's version) is what manifests,
summaries and every table header record. ``serve`` and the reward API refuse options that pay
for nothing unless told (:func:`reward_refusal`).
"""

from __future__ import annotations

from trex_eval.protocols.conventions.spec import OPTIONS, Conventions, ProtocolSpec, parse

__all__ = ["OPTIONS", "Conventions", "ProtocolSpec", "parse", "reward_refusal"]


def reward_refusal(protocol: str, *, allowed: bool, accept: str) -> str | None:
    """Why a reward scorer must not grade under ``protocol`` (``None``: it may): a convention
    option that pays for nothing (:attr:`~.spec.Option.reward_risk`), unless ``allowed``.
    ``accept`` names how the user allows them, for the message.

    Raises:
        ConfigError: ``protocol`` is not a valid protocol text (see :func:`~.spec.parse`).
    """
    spec = parse(protocol)
    risks = spec.reward_risks()
    if allowed or not risks:
        return None
    return (
        f"protocol {spec.text!r} grades with convention options a reward must not pay under by "
        f"default ({'; '.join(risks)}); accept them knowingly with {accept}, or serve the base "
        f"protocol {spec.base!r}"
    )
