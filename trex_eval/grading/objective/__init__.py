"""Objective rules: :mod:`.base` (the protocol, shared verdicts, the harness's value of a claim),
:mod:`.tolerance` (``strict`` and its parameterised relatives) and :mod:`.presets` (their registered
families and the registry factory). The reproduced ``trex-compat`` rule lives with its protocol
(:mod:`trex_eval.protocols.trex_compat.objective`)."""
