"""The trivial-model guard: what a verified-feasible model must show before a reward term pays it.
Pure.

A re-solve proves that a captured model is feasible and that the program reported its optimum,
not that it models the problem: ``max x`` subject to ``x <= 1`` is verified feasible on every
problem. :func:`uses_data` asks two things of the model, both from the harness's own capture
(never from what the program printed) and neither from the label:

1. **Size.** At least :data:`MIN_VARIABLES` variables and :data:`MIN_CONSTRAINTS` constraint
   (a matrix row with a nonzero coefficient, or a quadratic, general or SOS constraint). Variable
   bounds alone are no constraint: a one-variable model with a bound is what a program builds
   when it does not model.
2. **The problem's data.** At least ``min(`` :data:`MIN_STATED` ``, n)`` of the ``n`` numbers the
   problem states (its statement and its instance files, 0 and 1 left out: every model holds
   them) show in the model. A stated number ``s`` shows when the model's coefficients, bounds,
   right-hand sides or objective constant hold ``s``, ``s/100`` or ``100 s`` (a percentage), or
   hold ``s`` combined with another stated number ``t`` (``s·t``, ``s/t``, ``s+t``, ``s-t``: an
   area, a cost per unit of a total), or when the model's variable or row names spell it (data
   used as a key, as a facility at ``(34.39, 41.79)`` is). Values compare in absolute value to a
   relative :data:`REL_TOL`.

Calibration: every one of the 394 reference models of ``b4o-orgeval`` passes (4 of them only
by their names, 0 by fewer than two numbers); a model built from 0 and 1 alone never passes where
the problem states two numbers other than 0 and 1. A problem that states no such number (an
inline problem without a question) is judged by size only: there is no data to look for.

The guard is a floor, not a proof of modelling: a program that copies two stated numbers into a
two-variable model passes it. It costs at most :data:`PAIR_BUDGET` look-ups of the pairwise
search, each a bisection, and only when no two numbers show literally.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from trex_eval.linear_model import LinearModel
from trex_eval.records import Problem

MIN_VARIABLES = 2
MIN_CONSTRAINTS = 1
MIN_STATED = 2
REL_TOL = 1e-6
PAIR_BUDGET = 300
"""The pairwise search combines at most this many of the model's distinct values with at most
this many stated numbers (the smallest of each: bounded work on a model of any size)."""
_TRIVIAL = (0.0, 1.0)

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
"""A number as a statement writes it (``1,200``, ``0.35``, ``2e5``); not one inside an
identifier (``x1``, ``Node_3``), whose digits are an index, not data."""
_NAME_SEPARATORS = re.compile(r"[_#\[\](),:;=]")


@dataclass(frozen=True, slots=True)
class GuardResult:
    """Whether the model passed (``passed``) and why, in one line without any value the problem
    keeps from the program (``detail``)."""

    passed: bool
    detail: str


def uses_data(model: LinearModel | None, problem: Problem) -> GuardResult:
    """The guard of the module docstring on ``model`` (the last solve's captured model; None: the
    harness captured none, which fails)."""
    if model is None:
        return GuardResult(False, "the harness captured no model to inspect")
    constraints = len({row for row, value in zip(model.a_row, model.a_val, strict=True) if value != 0.0})
    constraints += model.n_quadratic_constraints + model.n_general_constraints + model.n_sos
    if model.num_vars < MIN_VARIABLES or constraints < MIN_CONSTRAINTS:
        return GuardResult(
            False,
            f"trivial model: {model.num_vars} variables, {constraints} constraints "
            f"(needs {MIN_VARIABLES} and {MIN_CONSTRAINTS})",
        )
    stated = _STATED.of(problem)
    if not stated:
        return GuardResult(True, "the problem states no numbers; judged by size only")
    needed = min(MIN_STATED, len(stated))
    shown = _shown(model, stated, needed)
    if shown < needed:
        return GuardResult(
            False, f"the model shows {shown} of the problem's {len(stated)} stated numbers (needs {needed})"
        )
    return GuardResult(True, f"the model shows at least {shown} of the problem's stated numbers")


def _shown(model: LinearModel, stated: tuple[float, ...], needed: int) -> int:
    """How many stated numbers show in ``model`` (counting stops at ``needed``)."""
    values = sorted({abs(v) for v in _model_values(model) if math.isfinite(v)} - set(_TRIVIAL))
    names = sorted(
        _numbers_in(_NAME_SEPARATORS.sub(" ", name) for name in (*model.var_names, *model.row_names))
    )
    shown: set[float] = set()
    for s in stated:
        if _near(values, s) or _near(values, s / 100) or _near(values, s * 100) or _near(names, s):
            shown.add(s)
            if len(shown) >= needed:
                return len(shown)
    for value in values[:PAIR_BUDGET]:
        for s in stated[:PAIR_BUDGET]:
            if s not in shown and (
                _near(stated, value / s) or _near(stated, s / value) or _near(stated, abs(value - s))
            ):
                shown.add(s)
                if len(shown) >= needed:
                    return len(shown)
    return len(shown)


def _model_values(model: LinearModel) -> Iterator[float]:
    yield from model.obj
    yield from model.a_val
    yield from model.row_lower
    yield from model.row_upper
    yield from model.lb
    yield from model.ub
    yield model.objective_constant
    yield from (q for _, _, q in model.q_obj)


def _near(ordered: list[float] | tuple[float, ...], target: float) -> bool:
    """Whether sorted ``ordered`` holds ``target`` to :data:`REL_TOL`."""
    low = target * (1 - REL_TOL)
    index = bisect.bisect_left(ordered, low)
    return index < len(ordered) and ordered[index] <= target * (1 + REL_TOL)


def _numbers_in(texts: Iterable[str]) -> set[float]:
    found: set[float] = set()
    for text in texts:
        for match in _NUMBER.finditer(text):
            try:
                found.add(abs(float(match.group(0).replace(",", ""))))
            except ValueError:  # an exponent past the float range
                continue
    return found


def _json_numbers(value: object, into: set[float]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        into.add(abs(float(value)))
    elif isinstance(value, dict):
        for item in value.values():
            _json_numbers(item, into)
    elif isinstance(value, list):
        for item in value:
            _json_numbers(item, into)


def stated_numbers(problem: Problem) -> tuple[float, ...]:
    """The problem's stated numbers, sorted, distinct, in absolute value, 0 and 1 left out: those of
    its statement and of its instance files (a JSON file read as JSON, any other file as text)."""
    found = _numbers_in([problem.question])
    for text in problem.instance_files.values():
        try:
            _json_numbers(json.loads(text), found)
        except ValueError:
            found |= _numbers_in([text])
    return tuple(sorted(v for v in found if math.isfinite(v) and v not in _TRIVIAL))


class _StatedCache:
    """:func:`stated_numbers` once per problem text (a reward server grades each problem many
    times); the key is the texts themselves, whose hashes Python keeps."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[float, ...]] = {}

    def of(self, problem: Problem) -> tuple[float, ...]:
        key = (problem.question, tuple(sorted(problem.instance_files.items())))
        with self._lock:
            found = self._cache.get(key)
        if found is None:
            found = stated_numbers(problem)
            with self._lock:
                if len(self._cache) >= self._size:
                    self._cache.clear()  # a bound, not an LRU: a training set cycles through its problems
                self._cache[key] = found
        return found


_STATED = _StatedCache()
