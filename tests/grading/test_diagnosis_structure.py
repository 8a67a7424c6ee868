"""Structure-graded diagnosis on the real B4O-ORGEval reference models: single known edits of each
reference (the sense, integrality, a row dropped, added or changed, a column added, an objective
coefficient, a lost non-negativity) are failed by the real ``orgeval-exact`` rule and named by
the part-by-part comparison; renaming and reordering are not differences; through
``EvaluationPlan.diagnosed`` a failing captured model gets its diagnosis and keeps its verdict."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from trex_eval.benchmarks import load_benchmark
from trex_eval.grading import get_rule
from trex_eval.grading.diagnosis.structure import structure_diagnosis
from trex_eval.lp import parse_lp
from trex_eval.protocols.judge import ReferenceModels
from trex_eval.protocols.plan import plan_for
from trex_eval.records import (
    DiagnosisCategory,
    ExecStatus,
    Execution,
    LinearModel,
    SolveRecord,
    SolveStatus,
    StructureReference,
    Verdict,
)

C = DiagnosisCategory


def _references(data_dir: Path, count: int = 40) -> list[LinearModel]:
    bench = load_benchmark("b4o-orgeval", data_dir=data_dir)
    models = []
    for problem in bench.problems[:count]:
        assert isinstance(problem.reference, StructureReference)
        models.append(parse_lp(Path(problem.reference.lp_path).read_text(encoding="utf-8")))
    return models


def _entries(model: LinearModel) -> list[dict[int, float]]:
    rows: list[dict[int, float]] = [{} for _ in model.row_names]
    for i, j, value in zip(model.a_row, model.a_col, model.a_val, strict=True):
        rows[i][j] = rows[i].get(j, 0.0) + value
    return rows


def _with_rows(model: LinearModel, rows: list[tuple[str, dict[int, float], float, float]]) -> LinearModel:
    a_row, a_col, a_val = [], [], []
    for i, (_, terms, _, _) in enumerate(rows):
        for j, value in terms.items():
            a_row.append(i)
            a_col.append(j)
            a_val.append(value)
    return model.model_copy(
        update={
            "row_names": tuple(name for name, _, _, _ in rows),
            "row_lower": tuple(low for _, _, low, _ in rows),
            "row_upper": tuple(up for _, _, _, up in rows),
            "a_row": tuple(a_row),
            "a_col": tuple(a_col),
            "a_val": tuple(a_val),
        }
    )


def _rows_of(model: LinearModel) -> list[tuple[str, dict[int, float], float, float]]:
    return [
        (name, terms, model.row_lower[i], model.row_upper[i])
        for i, (name, terms) in enumerate(zip(model.row_names, _entries(model), strict=True))
    ]


def _wide_row(model: LinearModel) -> int | None:
    """A row with at least two entries and a distinct signature (a row a mutation can target)."""
    rows = _rows_of(model)
    for i, (_, terms, _, _) in enumerate(rows):
        if len([v for v in terms.values() if v]) >= 2:
            return i
    return None


Mutation = Callable[[LinearModel], LinearModel | None]


def _flip(model: LinearModel) -> LinearModel:
    return model.model_copy(update={"sense": "min" if model.sense == "max" else "max"})


def _relax(model: LinearModel) -> LinearModel | None:
    if not any(kind in ("I", "B") for kind in model.vtype):
        return None
    lb = list(model.lb)
    ub = list(model.ub)
    for j, kind in enumerate(model.vtype):
        if kind == "B":
            lb[j], ub[j] = max(lb[j], 0.0), min(ub[j], 1.0)
    vtype = tuple("C" if kind in ("I", "B") else kind for kind in model.vtype)
    return model.model_copy(update={"vtype": vtype, "lb": tuple(lb), "ub": tuple(ub)})


def _integral(model: LinearModel) -> LinearModel | None:
    if not any(kind == "C" for kind in model.vtype):
        return None
    return model.model_copy(update={"vtype": tuple("I" if kind == "C" else kind for kind in model.vtype)})


def _drop(model: LinearModel) -> LinearModel | None:
    target = _wide_row(model)
    if target is None:
        return None
    rows = _rows_of(model)
    return _with_rows(model, rows[:target] + rows[target + 1 :])


def _add(model: LinearModel) -> LinearModel | None:
    if model.num_vars < 2:
        return None
    return _with_rows(model, [*_rows_of(model), ("added", {0: 1.0, 1: 3.0}, -math.inf, 987654.0)])


def _change(model: LinearModel) -> LinearModel | None:
    target = _wide_row(model)
    if target is None:
        return None
    rows = _rows_of(model)
    name, terms, low, up = rows[target]
    first = next(j for j, v in terms.items() if v)
    rows[target] = (name, {**terms, first: terms[first] * 7.0 + 1.0}, low, up)
    return _with_rows(model, rows)


def _column(model: LinearModel) -> LinearModel:
    return model.model_copy(
        update={
            "var_names": (*model.var_names, "added"),
            "obj": (*model.obj, 0.0),
            "lb": (*model.lb, 0.0),
            "ub": (*model.ub, 5.0),
            "vtype": (*model.vtype, "C"),
        }
    )


def _objective(model: LinearModel) -> LinearModel | None:
    nonzero = [j for j, c in enumerate(model.obj) if c]
    if not nonzero:
        return None
    obj = list(model.obj)
    obj[nonzero[0]] = obj[nonzero[0]] * 3.0 + 1.0
    return model.model_copy(update={"obj": tuple(obj)})


MUTATIONS: dict[str, tuple[Mutation, set[C]]] = {
    "sense flipped": (_flip, {C.SENSE_FLIPPED}),
    "integrality relaxed": (_relax, {C.INTEGRALITY_MISSING}),
    "integrality added": (_integral, {C.INTEGRALITY_EXTRA}),
    "row dropped": (_drop, {C.CONSTRAINT_MISSING}),
    "row added": (_add, {C.CONSTRAINT_EXTRA}),
    "row changed": (_change, {C.CONSTRAINT_DIFFERS}),
    "objective changed": (_objective, {C.OBJECTIVE_DIFFERS}),
}


def test_single_edits_of_the_reference_models_are_named(data_dir: Path) -> None:
    rule = get_rule("orgeval-exact")
    outcomes: dict[str, Counter[str]] = {name: Counter() for name in MUTATIONS}
    for reference in _references(data_dir, count=1000):  # all 394
        for name, (mutate, expected) in MUTATIONS.items():
            mutant = mutate(reference)
            if mutant is None:
                continue
            graded = rule.grade(reference, mutant)  # type: ignore[attr-defined]
            if graded.verdict is not Verdict.WRONG:
                outcomes[name]["not a failure"] += 1  # an edit ORGEval calls equivalent (or undecided)
                continue
            found = structure_diagnosis(reference, mutant)
            outcomes[name]["right" if found.category in expected else found.category.value] += 1
    for name, counts in outcomes.items():
        tried = sum(v for k, v in counts.items() if k != "not a failure")
        assert tried >= 100, (name, counts)
        assert counts["right"] == tried, (name, counts)  # measured: every mutant of every kind named


def test_a_column_or_lost_non_negativity_is_named_and_renaming_is_no_difference(data_dir: Path) -> None:
    reference = next(m for m in _references(data_dir) if m.num_vars >= 2 and _wide_row(m) is not None)
    assert structure_diagnosis(reference, _column(reference)).category is C.VARIABLES_DIFFER
    rule = get_rule("orgeval-exact")

    def freed(model: LinearModel) -> LinearModel | None:
        """``model`` with one non-negative column made free, where ORGEval calls that a change."""
        for j in (j for j, low in enumerate(model.lb) if low == 0.0):
            mutant = model.model_copy(update={"lb": (*model.lb[:j], -math.inf, *model.lb[j + 1 :])})
            if rule.grade(model, mutant).verdict is Verdict.WRONG:  # type: ignore[attr-defined]
                return mutant
        return None  # every column is held at zero or above by a one-variable row too

    pairs = ((model, freed(model)) for model in _references(data_dir))
    model, mutant = next((m, x) for m, x in pairs if x is not None)
    found = structure_diagnosis(model, mutant)
    assert found.category is C.BOUNDS_MISSING and "1 column" in found.detail

    # Rows reversed, each row negated into the other orientation and scaled: still the same rows.
    rows = _rows_of(reference)[::-1]
    turned = [
        (f"r{i}", {j: -2.0 * v for j, v in t.items()}, -2.0 * up, -2.0 * low)
        for i, (_, t, low, up) in enumerate(rows)
    ]
    same = structure_diagnosis(reference, _with_rows(reference, turned))
    assert same.category is C.UNEXPLAINED and same.evidence["rows_without_counterpart"] == 0
    target = _wide_row(reference)
    assert target is not None
    dropped = structure_diagnosis(
        reference, _with_rows(reference, [r for i, r in enumerate(_rows_of(reference)) if i != target])
    )
    assert dropped.category is C.CONSTRAINT_MISSING and repr(reference.row_names[target]) in dropped.detail


def test_the_plan_diagnoses_a_failing_structure_sample_and_keeps_its_verdict(data_dir: Path) -> None:
    bench = load_benchmark("b4o-orgeval", data_dir=data_dir)
    plan = plan_for(bench, protocol="default")
    problem = next(
        p
        for p in bench.problems
        if isinstance(p.reference, StructureReference) and _drop(ReferenceModels()(p.reference)) is not None
    )
    references = ReferenceModels()
    assert isinstance(problem.reference, StructureReference)
    mutant = _drop(references(problem.reference))
    solve = SolveRecord(library="gurobipy", status=SolveStatus.OPTIMAL, raw_status="OPTIMAL", model=mutant)
    execution = Execution(status=ExecStatus.OK, solves=(solve,))
    grade = plan.grade(problem, execution, reference_model=references)
    assert grade.verdict is Verdict.WRONG
    diagnosed = plan.diagnosed(problem, None, execution, grade, reference_model=references)
    assert diagnosed.verdict is grade.verdict and diagnosed.reason == grade.reason
    assert diagnosed.diagnosis is not None and diagnosed.diagnosis.category is C.CONSTRAINT_MISSING

    nothing = Execution(status=ExecStatus.OK)
    no_model = plan.grade(problem, nothing, reference_model=references)
    found = plan.diagnosed(problem, None, nothing, no_model, reference_model=references).diagnosis
    assert found is not None and found.category is C.NO_SOLVE
    without_loader = plan.diagnosed(problem, None, execution, grade).diagnosis
    assert without_loader is not None and without_loader.category is C.UNEXPLAINED


def test_parts_it_does_not_compare_or_kinds_of_columns_are_not_misnamed(data_dir: Path) -> None:
    reference = next(m for m in _references(data_dir) if m.num_vars >= 2 and _wide_row(m) is not None)
    shifted = reference.model_copy(update={"objective_constant": reference.objective_constant + 5.0})
    assert structure_diagnosis(reference, shifted).category is C.OBJECTIVE_DIFFERS
    semi = reference.model_copy(update={"vtype": ("N", *reference.vtype[1:])})
    integral = reference.model_copy(update={"vtype": ("I", *reference.vtype[1:])})
    assert structure_diagnosis(integral, semi).category is C.VARIABLES_DIFFER
    with_sos = reference.model_copy(update={"n_sos": 1})
    found = structure_diagnosis(reference, _drop(with_sos) or with_sos)
    assert found.category is C.UNEXPLAINED and "not compared part by part" in found.detail
