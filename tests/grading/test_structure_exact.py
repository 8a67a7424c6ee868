"""The exact ORGEval rule: decides every ORGEval reference (quadratic and symmetric ones
included), has no false verdicts on the seeded perturbation corpus, keeps the stated
invariances, puts quadratic, SOS and indicator parts in the graph and answers
not_determinable only for parts it does not hold or a spent time budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from lp_writer import write_lp
from structure_corpus import DIFFERENT, EQUIVALENT, corpus
from structure_perturb import perturb
from test_structure_compat import G11

from trex_eval.grading import get_rule
from trex_eval.grading.structure.exact import RULE, check_exact
from trex_eval.grading.structure.fixed import check_fixed
from trex_eval.lp import parse_lp
from trex_eval.records import LinearModel, Verdict

# reference-harness.md §1.3 / §9 G8: quadratic 32, 33, 56, 57, 364, 365, 374, 375; references
# whose graphs fail ORGEval's sufficiency test 286, 287, 360, 361.
QUADRATIC = {32, 33, 56, 57, 364, 365, 374, 375}
NOT_SUFFICIENT = {286, 287, 360, 361}


@pytest.fixture(scope="module")
def references(data_dir: Path) -> list[LinearModel]:
    folder = data_dir / "data" / "bench4opt" / "lp_code"
    return [parse_lp((folder / f"model_{k}_problem{k}.lp").read_text()) for k in range(394)]


def test_every_reference_is_decided_against_itself(references: list[LinearModel]) -> None:
    grades = [check_exact(model, model) for model in references]
    assert [k for k, grade in enumerate(grades) if grade.verdict is not Verdict.CORRECT] == []
    # The 12 items orgeval-fixed leaves undecided, decided here: the symmetric ones by search.
    undecided = {k for k, m in enumerate(references) if check_fixed(m, m).verdict is Verdict.NOT_DETERMINABLE}
    assert undecided == QUADRATIC | NOT_SUFFICIENT
    for k in NOT_SUFFICIENT:
        evidence = grades[k].evidence
        assert evidence is not None and evidence.kind == "structure"
        assert "search over" in evidence.checks[-1].detail


def test_perturbation_corpus_has_no_false_verdicts(references: list[LinearModel]) -> None:
    cases = corpus(references, seed=0)
    transformations = {case.transformation for case in cases}
    assert transformations == set(EQUIVALENT) | set(DIFFERENT)
    assert len(cases) > 4000
    false_verdicts = []
    for case in cases:
        grade = check_exact(references[case.item], case.generated)
        expected = Verdict.CORRECT if case.equivalent else Verdict.WRONG
        if grade.verdict is not expected:
            false_verdicts.append((case.item, case.transformation, grade.reason))
    assert false_verdicts == []


def _lp(rows: str, *, objective: str = "Minimize\n 3 x + 2 y + z\n", tail: str = "") -> LinearModel:
    return parse_lp(f"{objective}Subject To\n{rows}{tail}End\n")


BASE = " c: x + y >= 4\n d: x + 3 y - z >= 6\n e: 2 x - z <= 3\n"


@pytest.mark.parametrize(
    ("generated", "verdict"),
    [
        # Variable and constraint order, renaming.
        (_lp(" e: - z + 2 x <= 3\n d: 3 b - z + x >= 6\n c: x + b >= 4\n",
             objective="Minimize\n 2 b + 3 x + z\n"), Verdict.CORRECT),
        # Scaling by a positive factor; <= written as >= with negated coefficients.
        (_lp(" c: 2 x + 2 y >= 8\n d: 0.5 x + 1.5 y - 0.5 z >= 3\n e: - 2 x + z >= -3\n"), Verdict.CORRECT),
        # Objective sense and constant.
        (_lp(BASE, objective="Maximize\n - 3 x - 2 y - z\n"), Verdict.CORRECT),
        (_lp(BASE, objective="Maximize\n 3 x + 2 y + z\n"), Verdict.WRONG),
        (_lp(BASE, objective="Minimize\n 3 x + 2 y + z + 5 Constant\n", tail="Bounds\n Constant = 1\n"),
         Verdict.WRONG),
        # Integrality.
        (_lp(BASE, tail="Generals\n y\n"), Verdict.WRONG),
        # A changed coefficient, a dropped row.
        (_lp(" c: x + y >= 4\n d: x + 3 y - z >= 6\n e: 2 x - 1.5 z <= 3\n"), Verdict.WRONG),
        (_lp(" c: x + y >= 4\n d: x + 3 y - z >= 6\n"), Verdict.WRONG),
    ],
)  # fmt: skip
def test_invariances(generated: LinearModel, verdict: Verdict) -> None:
    grade = check_exact(_lp(BASE), generated)
    assert grade.rule == RULE
    assert grade.verdict is verdict, grade.reason


@pytest.mark.parametrize(
    ("generated", "verdict"),
    [
        (_lp(BASE + " f: - 2 x >= -10\n", tail="Bounds\n x <= 7\n"), Verdict.CORRECT),
        (_lp(BASE + " f: 0.5 x <= 2.5\n"), Verdict.CORRECT),
        (_lp(BASE + " f: - 2 x >= -10\n", tail="Bounds\n x <= 4\n"), Verdict.WRONG),
        (_lp(BASE + " f: 2 x >= -10\n"), Verdict.WRONG),  # the sign matters: a lower bound
    ],
)
def test_single_variable_rows_are_bounds_with_their_sign(generated: LinearModel, verdict: Verdict) -> None:
    reference = _lp(BASE, tail="Bounds\n x <= 5\n")
    assert check_exact(reference, generated).verdict is verdict


QUADRATIC_BASE = " c: x + y >= 4\n q: x + [ x * y + 2 z ^2 ] <= 9\n"
QUADRATIC_OBJECTIVE = "Minimize\n 3 x + 2 y + z + [ 2 x * y ] / 2\n"


@pytest.mark.parametrize(
    ("generated", "objective", "verdict"),
    [
        (" c: y + x >= 4\n q: - x + [ - y * x - 2 z ^2 ] >= -9\n", QUADRATIC_OBJECTIVE, Verdict.CORRECT),
        (" c: x + y >= 4\n q: 2 x + [ 2 x * y + 4 z ^2 ] <= 18\n", QUADRATIC_OBJECTIVE, Verdict.CORRECT),
        (" c: x + y >= 4\n", QUADRATIC_OBJECTIVE, Verdict.WRONG),
        (" c: x + y >= 4\n q: x + [ x * z + 2 y ^2 ] <= 9\n", QUADRATIC_OBJECTIVE, Verdict.WRONG),
        (QUADRATIC_BASE, "Minimize\n 3 x + 2 y + z + [ 3 x * y ] / 2\n", Verdict.WRONG),
        (QUADRATIC_BASE, "Minimize\n 3 x + 2 y + z\n", Verdict.WRONG),
        (QUADRATIC_BASE, "Maximize\n - 3 x - 2 y - z + [ - 2 x * y ] / 2\n", Verdict.CORRECT),
    ],
)
def test_quadratic_parts_are_in_the_graph(generated: str, objective: str, verdict: Verdict) -> None:
    grade = check_exact(
        _lp(QUADRATIC_BASE, objective=QUADRATIC_OBJECTIVE), _lp(generated, objective=objective)
    )
    assert grade.verdict is verdict, grade.reason


def test_zero_rhs_quadratic_equalities_have_no_orientation() -> None:
    # BENCH4OPT_56 writes "[ x * y ] = 0" rows; the negated product is the same constraint.
    reference = _lp(" c: x + y + z >= 1\n p: [ x * y ] = 0\n r: x + [ y * z ] = 0\n")
    negated = _lp(" c: x + y + z >= 1\n p: [ - x * y ] = 0\n r: - x + [ - y * z ] = 0\n")
    swapped = _lp(" c: x + y + z >= 1\n p: [ x * y ] = 0\n r: - x + [ y * z ] = 0\n")
    assert check_exact(reference, negated).verdict is Verdict.CORRECT
    assert check_exact(reference, swapped).verdict is Verdict.WRONG


@pytest.mark.parametrize(
    ("generated", "verdict"),
    [
        ("SOS\n t: S2 :: z:30 y:20 x:10\n u: S1 :: y:5 x:7\n", Verdict.CORRECT),  # same order, other weights
        ("SOS\n s: S2 :: x:3 y:2 z:1\n t: S1 :: x:1 y:2\n", Verdict.CORRECT),  # order reversed
        ("SOS\n s: S2 :: y:1 x:2 z:3\n t: S1 :: x:1 y:2\n", Verdict.WRONG),  # other adjacency
        ("SOS\n s: S1 :: x:1 y:2 z:3\n t: S1 :: x:1 y:2\n", Verdict.WRONG),  # type 1 instead of 2
        ("SOS\n s: S2 :: x:1 y:2 z:3\n t: S1 :: x:1 z:2\n", Verdict.WRONG),  # other members
    ],
)
def test_sos_sets_are_in_the_graph(generated: str, verdict: Verdict) -> None:
    reference = _lp(BASE, tail="SOS\n s: S2 :: x:1 y:2 z:3\n t: S1 :: x:1 y:2\n")
    assert check_exact(reference, _lp(BASE, tail=generated)).verdict is verdict


@pytest.mark.parametrize(
    ("indicator", "verdict"),
    [
        (" i: b = 1 -> - 2 x - 4 y <= -2\n", Verdict.CORRECT),
        (" i: b = 0 -> x + 2 y >= 1\n", Verdict.WRONG),
        (" i: b = 1 -> x + 2 y >= 2\n", Verdict.WRONG),
        (" i: b = 1 -> 2 x + y >= 1\n", Verdict.WRONG),
    ],
)
def test_indicators_are_in_the_graph(indicator: str, verdict: Verdict) -> None:
    reference = _lp(BASE + " i: b = 1 -> x + 2 y >= 1\n", tail="Binaries\n b\n")
    generated = _lp(BASE + indicator, tail="Binaries\n b\n")
    assert check_exact(reference, generated).verdict is verdict


def test_parts_that_are_counted_but_not_held_are_not_determinable() -> None:
    base = _lp(BASE)
    with_max = _lp(BASE, tail="General Constraints\n g: w = MAX ( x , y )\n")
    assert with_max.n_general_constraints == 1 and not with_max.indicators
    grade = check_exact(base, with_max)
    assert grade.verdict is Verdict.NOT_DETERMINABLE
    assert "1 general constraints" in grade.reason
    captured = base.model_copy(update={"n_quadratic_constraints": 2})  # a hook that only counted them
    assert check_exact(captured, captured).verdict is Verdict.NOT_DETERMINABLE


CYCLES = (
    " a: x1 + x2 >= 1\n b: x2 + x3 >= 1\n c: x3 + x4 >= 1\n d: x4 + x1 >= 1\n"
    " e: y1 + y2 >= 1\n f: y2 + y3 >= 1\n g: y3 + y4 >= 1\n h: y4 + y1 >= 1\n"
)
EIGHT_CYCLE = (
    " a: x1 + x2 >= 1\n b: x2 + x3 >= 1\n c: x3 + x4 >= 1\n d: x4 + y1 >= 1\n"
    " e: y1 + y2 >= 1\n f: y2 + y3 >= 1\n g: y3 + y4 >= 1\n h: y4 + x1 >= 1\n"
)
CYCLE_OBJECTIVE = "Minimize\n x1 + x2 + x3 + x4 + y1 + y2 + y3 + y4\n"


def test_symmetries_colour_refinement_cannot_resolve_are_decided() -> None:
    # Two 4-cycles and one 8-cycle of identical variables and rows have the same colour
    # refinement; orgeval-fixed cannot decide, the search can.
    two = _lp(CYCLES, objective=CYCLE_OBJECTIVE)
    one = _lp(EIGHT_CYCLE, objective=CYCLE_OBJECTIVE)
    assert check_fixed(two, one).verdict is Verdict.NOT_DETERMINABLE
    different = check_exact(two, one)
    assert different.verdict is Verdict.WRONG
    assert "no isomorphism" in different.reason
    copy = parse_lp(write_lp(perturb(two, seed=3)))
    assert check_exact(two, copy).verdict is Verdict.CORRECT


def test_a_spent_time_budget_is_not_determinable() -> None:
    two = _lp(CYCLES, objective=CYCLE_OBJECTIVE)
    grade = check_exact(two, _lp(EIGHT_CYCLE, objective=CYCLE_OBJECTIVE), budget_s=0.0)
    assert grade.verdict is Verdict.NOT_DETERMINABLE
    assert "budget" in grade.reason


def _exact_expectation(name: str, equivalent: bool) -> Verdict:
    return Verdict.CORRECT if equivalent else Verdict.WRONG


@pytest.mark.parametrize("name", list(G11))
def test_edge_case_table_gets_the_mathematical_answer(name: str) -> None:
    reference, generated, _, equivalent = G11[name]
    assert check_exact(parse_lp(reference), parse_lp(generated)).verdict is _exact_expectation(
        name, equivalent
    )


def test_registered_in_the_one_registry() -> None:
    rule = get_rule("orgeval-exact")
    assert rule.spec == RULE == "orgeval-exact@2"
    model = _lp(BASE)
    assert rule.grade(model, model).verdict is Verdict.CORRECT  # type: ignore[union-attr]
