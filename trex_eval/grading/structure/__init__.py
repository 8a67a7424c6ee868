"""Structural-equivalence rules on LP models: :mod:`.base` (the protocol), :mod:`.canonical`
(canonical form), :mod:`.wl` (colour refinement and its sufficiency test), :mod:`.fixed`
(``orgeval-fixed``) and :mod:`.exact` (``orgeval-exact``, the default). The reproduced
``orgeval-trex-compat`` lives with its protocol (:mod:`trex_eval.protocols.trex_compat.structure`)."""
