"""The fixed ORGEval rule: accepts equivalent rewrites of every ORGEval reference LP, rejects
real changes, answers not_determinable where the graph cannot decide, and is right on the
§5.2 edge-case table where the reference harness is wrong."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from lp_writer import write_lp
from structure_perturb import perturb
from test_structure_compat import G11

from trex_eval.grading.structure.fixed import RULE, check_fixed
from trex_eval.lp import parse_lp
from trex_eval.records import LinearModel, Verdict

# reference-harness.md §1.3: quadratic objective 32, 33, 364, 365; quadratic constraints
# 56, 57, 374, 375; references failing the sufficiency test 286, 287, 360, 361.
NONLINEAR = {32, 33, 56, 57, 364, 365, 374, 375}
NOT_SUFFICIENT = {286, 287, 360, 361}


@pytest.fixture(scope="module")
def references(data_dir: Path) -> list[LinearModel]:
    folder = data_dir / "data" / "bench4opt" / "lp_code"
    return [parse_lp((folder / f"model_{k}_problem{k}.lp").read_text()) for k in range(394)]


def test_every_reference_against_itself(references: list[LinearModel]) -> None:
    verdicts = {k: check_fixed(model, model).verdict for k, model in enumerate(references)}
    undecided = {k for k, verdict in verdicts.items() if verdict is Verdict.NOT_DETERMINABLE}
    assert undecided == NONLINEAR | NOT_SUFFICIENT
    assert all(verdict is Verdict.CORRECT for k, verdict in verdicts.items() if k not in undecided)


def test_every_reference_against_perturbed_copies(references: list[LinearModel]) -> None:
    mismatches = []
    for k, model in enumerate(references):
        expected = Verdict.NOT_DETERMINABLE if k in NONLINEAR | NOT_SUFFICIENT else Verdict.CORRECT
        for seed in (k, k + 1000):
            copy = perturb(model, seed=seed, flip_sense=seed % 2 == 0)
            if not copy.n_quadratic_constraints:
                copy = parse_lp(write_lp(copy))  # the generated side arrives as LP text
            grade = check_fixed(model, copy)
            if grade.verdict is not expected:
                mismatches.append((k, seed, grade.reason))
    assert mismatches == []


def _entries(model: LinearModel) -> list[tuple[int, int, float]]:
    return list(zip(model.a_row, model.a_col, model.a_val, strict=True))


def _with_entries(
    model: LinearModel, entries: list[tuple[int, int, float]], **changes: object
) -> LinearModel:
    return model.model_copy(
        update={
            "a_row": tuple(e[0] for e in entries),
            "a_col": tuple(e[1] for e in entries),
            "a_val": tuple(e[2] for e in entries),
            **changes,
        }
    )


def _long_rows(model: LinearModel) -> list[int]:
    sizes: dict[int, int] = {}
    for i, _, _ in _entries(model):
        sizes[i] = sizes.get(i, 0) + 1
    return sorted(i for i, size in sizes.items() if size >= 2)


def _flip_sense(model: LinearModel, rng: random.Random) -> LinearModel | None:
    if not any(model.obj):
        return None
    return model.model_copy(update={"sense": "min" if model.sense == "max" else "max"})


def _drop_row(model: LinearModel, rng: random.Random) -> LinearModel | None:
    candidates = _long_rows(model)
    if not candidates:
        return None
    dropped = rng.choice(candidates)
    keep = [i for i in range(model.num_rows) if i != dropped]
    renumber = {old: new for new, old in enumerate(keep)}
    entries = [(renumber[i], j, a) for i, j, a in _entries(model) if i != dropped]
    return _with_entries(
        model,
        entries,
        row_names=tuple(model.row_names[i] for i in keep),
        row_lower=tuple(model.row_lower[i] for i in keep),
        row_upper=tuple(model.row_upper[i] for i in keep),
    )


def _change_coefficient(model: LinearModel, rng: random.Random) -> LinearModel | None:
    rows = set(_long_rows(model))
    positions = [k for k, (i, _, _) in enumerate(_entries(model)) if i in rows]
    if not positions:
        return None
    entries = _entries(model)
    k = rng.choice(positions)
    i, j, a = entries[k]
    entries[k] = (i, j, a * 1.5)
    return _with_entries(model, entries)


def _columns_in_long_rows(model: LinearModel) -> set[int]:
    rows = set(_long_rows(model))
    return {j for i, j, _ in _entries(model) if i in rows}


def _change_integrality(model: LinearModel, rng: random.Random) -> LinearModel | None:
    used = _columns_in_long_rows(model)
    candidates = [j for j in sorted(used) if model.vtype[j] in ("C", "I", "B")]
    if not candidates:
        return None
    j = rng.choice(candidates)
    vtype = list(model.vtype)
    vtype[j] = "C" if vtype[j] in ("I", "B") else "I"
    return model.model_copy(update={"vtype": tuple(vtype)})


def _effective_bounds(model: LinearModel, column: int) -> tuple[float, float]:
    """The column's bounds intersected with every single-entry row on it (by hand)."""
    sizes: dict[int, int] = {}
    for i, _, _ in _entries(model):
        sizes[i] = sizes.get(i, 0) + 1
    lower, upper = model.lb[column], model.ub[column]
    for i, j, a in _entries(model):
        if j == column and sizes[i] == 1:
            low, high = model.row_lower[i] / a, model.row_upper[i] / a
            low, high = (low, high) if a > 0 else (high, low)
            lower, upper = max(lower, low), min(upper, high)
    return lower, upper


def _change_bound(model: LinearModel, rng: random.Random) -> LinearModel | None:
    candidates = []
    for j in sorted(_columns_in_long_rows(model)):
        lower, upper = _effective_bounds(model, j)
        if model.vtype[j] == "C" and lower < upper:
            candidates.append((j, lower, upper))
    if not candidates:
        return None
    j, lower, upper = rng.choice(candidates)
    # A strictly tighter upper bound: a real change of the feasible set's description.
    if math.isfinite(lower) and math.isfinite(upper):
        tighter = (lower + upper) / 2
    else:
        tighter = lower + 1.0 if math.isfinite(lower) else (upper - 1.0 if math.isfinite(upper) else 0.0)
    uppers = list(model.ub)
    uppers[j] = tighter
    return model.model_copy(update={"ub": tuple(uppers)})


def _change_constant(model: LinearModel, rng: random.Random) -> LinearModel | None:
    return model.model_copy(update={"objective_constant": model.objective_constant + 1.0})


MUTATIONS: dict[str, Callable[[LinearModel, random.Random], LinearModel | None]] = {
    "sense_flipped": _flip_sense,
    "constraint_dropped": _drop_row,
    "coefficient_changed": _change_coefficient,
    "integrality_changed": _change_integrality,
    "bound_changed": _change_bound,
    "objective_constant_changed": _change_constant,
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_real_changes_are_wrong(references: list[LinearModel], mutation: str) -> None:
    accepted, applied = [], 0
    for k, model in enumerate(references):
        if k in NONLINEAR | NOT_SUFFICIENT:
            continue
        changed = MUTATIONS[mutation](model, random.Random(k))
        if changed is None:
            continue
        applied += 1
        grade = check_fixed(model, perturb(changed, seed=k))
        if grade.verdict is not Verdict.WRONG:
            accepted.append((k, grade.verdict.value))
    assert applied >= 250  # of the 382 linear, decidable references
    assert accepted == []


def _fixed_expectation(name: str, equivalent: bool) -> Verdict:
    if name.startswith("quadratic"):
        return Verdict.NOT_DETERMINABLE
    return Verdict.CORRECT if equivalent else Verdict.WRONG


@pytest.mark.parametrize("name", list(G11))
def test_edge_case_table_gets_the_mathematical_answer(name: str) -> None:
    reference, generated, _, equivalent = G11[name]
    grade = check_fixed(parse_lp(reference), parse_lp(generated))
    assert grade.rule == RULE
    assert grade.verdict is _fixed_expectation(name, equivalent), grade.reason


def _lp(rows: str, *, objective: str = "Minimize\n 3 x + 2 y + z\n", tail: str = "") -> LinearModel:
    return parse_lp(f"{objective}Subject To\n{rows}{tail}End\n")


@pytest.mark.parametrize(
    ("reference", "generated", "verdict"),
    [
        # Scaled and rounded coefficients: relative differences of 1e-12 are the same number.
        (" c: 0.3 x + 0.6 y >= 0.9\n", " c: 0.1 x + 0.2 y >= 0.30000000000000004\n", Verdict.CORRECT),
        (" c: 3 x + y >= 1\n", " c: 3.000000000003 x + y >= 1\n", Verdict.CORRECT),
        (" c: 3 x + y >= 1\n", " c: 3.0000004 x + y >= 1\n", Verdict.WRONG),
        # Zero-rhs equalities have no natural orientation.
        (" c: x - y >= -5\n", " c: - x + y >= -5\n", Verdict.WRONG),
        (" c: x - y - z = 0\n", " c: - x + y + z = 0\n", Verdict.CORRECT),
        (" c: x - y = 0\n d: y - z = 0\n", " c: y - x = 0\n d: z - y = 0\n", Verdict.CORRECT),
        (" c: x + y - 2 z = 0\n", " c: x - 2 y + z = 0\n", Verdict.WRONG),
        # Bounds from single-variable rows, with the sign handled and intersected.
        (" c: x + y >= 1\n b: - 2 x >= -10\n", " c: x + y >= 1\n b: x <= 5\n", Verdict.CORRECT),
        (" c: x + y >= 1\n b: x >= -3\n", " c: x + y >= 1\n", Verdict.CORRECT),
        (" c: x + y >= 1\n b: x >= 3\n", " c: x + y >= 1\n", Verdict.WRONG),
        # A violated row without variables makes a model infeasible.
        (" c: x + y >= 1\n e: 0 x >= 1\n", " c: x + y >= 1\n", Verdict.WRONG),
        (" c: x + y >= 1\n e: 0 x >= -1\n", " c: x + y >= 1\n", Verdict.CORRECT),
    ],
)
def test_numeric_keys_and_orientation(reference: str, generated: str, verdict: Verdict) -> None:
    grade = check_fixed(_lp(reference), _lp(generated))
    assert grade.verdict is verdict, grade.reason


def _ranged(lower: float, upper: float, *, swap: bool) -> LinearModel:
    model = _lp(" c: x - y >= 0\n d: x + z >= 1\n")
    entries = _entries(model)
    if swap:
        entries = [(i, j, -a if i == 0 else a) for i, j, a in entries]
    return _with_entries(model, entries, row_lower=(lower, 1.0), row_upper=(upper, math.inf))


@pytest.mark.parametrize(
    ("generated", "verdict"),
    [
        (_ranged(-5.0, 5.0, swap=True), Verdict.CORRECT),
        (_ranged(-10.0, 10.0, swap=False).model_copy(update={"row_lower": (-10.0, 1.0)}), Verdict.WRONG),
    ],
)
def test_symmetric_range_has_no_orientation(generated: LinearModel, verdict: Verdict) -> None:
    assert check_fixed(_ranged(-5.0, 5.0, swap=False), generated).verdict is verdict


@pytest.mark.parametrize(
    ("generated", "verdict"),
    [
        (_ranged(-4.0, 5.0, swap=True), Verdict.CORRECT),
        (_ranged(-5.0, 4.0, swap=True), Verdict.WRONG),
        (_ranged(-5.0, 4.0, swap=False), Verdict.CORRECT),
    ],
)
def test_range_orientation(generated: LinearModel, verdict: Verdict) -> None:
    assert check_fixed(_ranged(-5.0, 4.0, swap=False), generated).verdict is verdict


def test_binary_equals_bounded_integer_and_unused_variables_are_ignored() -> None:
    binary = _lp(" c: x + y + z >= 1\n", tail="Binaries\n x\n")
    integer = _lp(" c: x + y + z >= 1\n", tail="Bounds\n x <= 1.5\nGenerals\n x\n")
    unused = _lp(" c: x + y + z >= 1\n w >= -1\n", tail="Bounds\n x <= 1\nGenerals\n x\n")
    assert check_fixed(binary, integer).verdict is Verdict.CORRECT
    assert check_fixed(binary, unused).verdict is Verdict.CORRECT


def test_sos_and_general_constraints_are_not_determinable() -> None:
    base = _lp(" c: x + y >= 1\n")
    with_sos = _lp(" c: x + y >= 1\n", tail="SOS\n s: S1 :: x:1 y:2\n")
    with_indicator = _lp(" c: x + y >= 1\n i: z = 1 -> x >= 1\n")
    for other in (with_sos, with_indicator):
        assert check_fixed(base, other).verdict is Verdict.NOT_DETERMINABLE
        assert check_fixed(other, other).verdict is Verdict.NOT_DETERMINABLE


def test_symmetric_graph_is_not_determinable() -> None:
    # Two disjoint copies of a 4-cycle of identical variables and rows: colour refinement cannot
    # tell which variables belong together, and the sufficiency test sees it.
    rows = " a: x1 + x2 >= 1\n b: x2 + x3 >= 1\n c: x3 + x4 >= 1\n d: x4 + x1 >= 1\n"
    rows += " e: y1 + y2 >= 1\n f: y2 + y3 >= 1\n g: y3 + y4 >= 1\n h: y4 + y1 >= 1\n"
    objective = "Minimize\n x1 + x2 + x3 + x4 + y1 + y2 + y3 + y4\n"
    model = _lp(rows, objective=objective)
    grade = check_fixed(model, model)
    assert grade.verdict is Verdict.NOT_DETERMINABLE
    assert grade.evidence is not None and grade.evidence.kind == "structure"
    assert [check.name for check in grade.evidence.checks][-1] == "sufficiency"
