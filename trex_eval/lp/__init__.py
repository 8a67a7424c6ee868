"""LP/MPS text -> :class:`~trex_eval.records.LinearModel` with ``gurobipy.read()`` semantics.

Pure: callers pass text in and get records back; nothing here touches files, the
environment or a solver. Malformed input raises :class:`~trex_eval.errors.GradingError` naming
the line and what was expected.
"""

from __future__ import annotations

from trex_eval.lp.builder import ModelTooLarge
from trex_eval.lp.lp_reader import parse_lp
from trex_eval.lp.mps_reader import parse_mps
from trex_eval.lp.senses import Sense, row_bounds, row_sense

__all__ = ["ModelTooLarge", "Sense", "parse_lp", "parse_mps", "row_bounds", "row_sense"]
