"""Why a sample failed, decided mechanically: :func:`diagnose` returns a
:class:`~trex_eval.records.Diagnosis` (a :class:`~trex_eval.records.DiagnosisCategory`, a detail
line, numeric evidence) for a graded sample that did not pass. Pure: the re-solves of edited
models go through the solver the caller hands in (the run hands the harness's own re-solve).

Modules: :mod:`.failures` (before a model exists: completion, exception, limits),
:mod:`.edits` (single edits of a captured model), :mod:`.drops` (which one constraint's drop
meets the reference, searched group by group), :mod:`.values` (scale, rounding, near miss, the
rule's acceptance of a value and where a value stands to the reference), :mod:`.search` (the
entry point, its order and budget), :mod:`.structure` (a structure-graded model against the
reference model, part by part).
"""

from __future__ import annotations

from trex_eval.grading.diagnosis.failures import NOT_DIAGNOSED
from trex_eval.grading.diagnosis.search import DiagnosisBudget, ModelSolver, Solved, diagnose

__all__ = ["NOT_DIAGNOSED", "DiagnosisBudget", "ModelSolver", "Solved", "diagnose"]
