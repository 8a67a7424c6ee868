"""Structural-equivalence rules on LP models: :mod:`.base` (the protocol), :mod:`.canonical`
(canonical form), :mod:`.wl` (colour refinement and its sufficiency test) and :mod:`.fixed`
(``orgeval-fixed``). The reproduced ``orgeval-trex-compat`` lives with its protocol
(:mod:`trex_eval.protocols.trex_compat.structure`)."""
