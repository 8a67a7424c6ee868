"""Objective rules: :mod:`.base` (the protocol, shared verdicts) and :mod:`.tolerance` (``strict``
and its parameterised relatives). The reproduced ``trex-compat`` rule lives with its protocol
(:mod:`trex_eval.protocols.trex_compat.objective`)."""
