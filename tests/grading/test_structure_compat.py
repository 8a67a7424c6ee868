"""The trex-compat ORGEval rule against the reference harness's golden facts G7, G8, G11, G12
(reference-harness.md §9)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from trex_eval.lp import parse_lp
from trex_eval.protocols.trex_compat.structure import RULE, check_trex_compat, compat_info, format_float32
from trex_eval.records import LinearModel, Verdict


def _reference(data_dir: Path, k: int, *, feasible: bool = False) -> LinearModel:
    folder = "bench4opt_feasible" if feasible else "bench4opt"
    return parse_lp((data_dir / "data" / folder / "lp_code" / f"model_{k}_problem{k}.lp").read_text())


def test_g7_reference_pairs(data_dir: Path) -> None:
    grade = check_trex_compat(_reference(data_dir, 0), _reference(data_dir, 0))
    assert grade.verdict is Verdict.CORRECT and grade.rule == RULE
    assert compat_info(grade)["sufficient_msg"] == {"msg1": "WL-determinable", "msg2": "WL-determinable"}
    assert check_trex_compat(_reference(data_dir, 0), _reference(data_dir, 1)).passed
    assert compat_info(check_trex_compat(_reference(data_dir, 0), _reference(data_dir, 2))) == {
        "var_num_check": False
    }
    assert check_trex_compat(_reference(data_dir, 2), _reference(data_dir, 3)).passed
    symmetric = check_trex_compat(_reference(data_dir, 80), _reference(data_dir, 81))
    assert symmetric.passed
    assert compat_info(symmetric)["sufficient_msg"] == {
        "msg1": "Symmetric Decomposable.",
        "msg2": "Symmetric Decomposable.",
    }
    assert compat_info(check_trex_compat(_reference(data_dir, 178), _reference(data_dir, 204))) == {
        "var_num_check": True,
        "cons_num_check": True,
        "wl_check": False,
    }
    feasible_vs_orgeval = check_trex_compat(_reference(data_dir, 2, feasible=True), _reference(data_dir, 2))
    assert compat_info(feasible_vs_orgeval) == {"var_num_check": True, "cons_num_check": False}


def test_g8_self_checks_of_all_orgeval_references(data_dir: Path) -> None:
    messages: dict[str, list[int]] = {}
    for k in range(394):
        model = _reference(data_dir, k)
        grade = check_trex_compat(model, model)
        info = compat_info(grade)
        assert info["var_num_check"] and info["cons_num_check"]
        sufficient_msg = info["sufficient_msg"]
        assert isinstance(sufficient_msg, dict)
        assert grade.passed == info["sufficient_check"]
        messages.setdefault(sufficient_msg["msg1"], []).append(k)
    assert messages["Due to distinctness."] == [286, 287, 360, 361]
    assert messages["Symmetric Decomposable."] == [
        80,
        81,
        106,
        107,
        122,
        123,
        154,
        155,
        186,
        187,
        210,
        211,
        224,
        225,
        276,
        277,
        278,
        279,
        382,
        383,
    ]
    assert len(messages["WL-determinable"]) == 370


def test_g8_self_checks_of_all_feasible_references(data_dir: Path) -> None:
    rows = [json.loads(line) for line in (data_dir / "data" / "bench4opt_feasible" / "test.jsonl").open()]
    assert len(rows) == 344
    outcomes: dict[str, int] = {}
    for row in rows:
        model = parse_lp((data_dir / "data" / "bench4opt_feasible" / row["reference_lp_path"]).read_text())
        grade = check_trex_compat(model, model)
        key = compat_info(grade)["sufficient_msg"]["msg1"] if grade.passed else "False"  # type: ignore[index]
        outcomes[key] = outcomes.get(key, 0) + 1
    assert outcomes == {"WL-determinable": 222, "Symmetric Decomposable.": 82, "False": 40}


BASE_OBJECTIVE = "Minimize\n 3 x + 2 y\n"
BASE_ROWS = " c1: x + y >= 4\n c2: x + 3 y >= 6\n"


def _lp(objective: str = BASE_OBJECTIVE, rows: str = BASE_ROWS, bounds: str = "", tail: str = "") -> str:
    return f"{objective}Subject To\n{rows}Bounds\n{bounds}{tail}End\n"


# The edge-case table of reference-harness.md §5.2 (G11): base = min 3x+2y s.t. x+y>=4, x+3y>=6.
# Each row: (reference LP, generated LP, T-Rex verdict, mathematically equivalent?)
G11 = {
    "renamed_variables_and_rows": (
        _lp(),
        _lp("Minimize\n 3 a + 2 b\n", " r1: a + b >= 4\n r2: a + 3 b >= 6\n"),
        True,
        True,
    ),
    "same_objective_maximised": (_lp(), _lp("Maximize\n 3 x + 2 y\n"), True, False),
    "negated_objective_maximised": (_lp(), _lp("Maximize\n - 3 x - 2 y\n"), False, True),
    "row_scaled_by_two": (_lp(), _lp(rows=" c1: 2 x + 2 y >= 8\n c2: x + 3 y >= 6\n"), False, True),
    "row_negated_with_flipped_sense": (
        _lp(),
        _lp(rows=" c1: - x - y <= -4\n c2: x + 3 y >= 6\n"),
        False,
        True,
    ),
    "zero_rhs_inequality_flipped": (
        _lp(rows=BASE_ROWS + " c3: x - y <= 0\n"),
        _lp(rows=BASE_ROWS + " c3: - x + y >= 0\n"),
        True,
        True,
    ),
    "zero_rhs_equality_negated": (
        _lp(rows=BASE_ROWS + " c3: x - 2 y = 0\n"),
        _lp(rows=BASE_ROWS + " c3: - x + 2 y = 0\n"),
        True,
        True,
    ),
    "zero_rhs_zero_sum_equality_negated": (
        _lp(rows=BASE_ROWS + " c3: x - y = 0\n"),
        _lp(rows=BASE_ROWS + " c3: - x + y = 0\n"),
        False,
        True,
    ),
    "nonzero_rhs_equality_negated": (
        _lp(rows=BASE_ROWS + " c3: x - y = 2\n"),
        _lp(rows=BASE_ROWS + " c3: - x + y = -2\n"),
        False,
        True,
    ),
    "single_variable_row_negated": (
        _lp(rows=BASE_ROWS + " c3: x <= 5\n"),
        _lp(rows=BASE_ROWS + " c3: - x >= -5\n"),
        False,
        True,
    ),
    "bound_versus_single_variable_row": (
        _lp(bounds=" x <= 10\n"),
        _lp(rows=BASE_ROWS + " c3: x <= 10\n"),
        True,
        True,
    ),
    "redundant_single_variable_row": (_lp(), _lp(rows=BASE_ROWS + " c3: x >= -3\n"), False, True),
    "objective_constant_added": (
        _lp(),
        _lp("Minimize\n 3 x + 2 y + 100 Constant\n", bounds=" Constant = 1\n"),
        True,
        False,
    ),
    "quadratic_constraint_dropped": (
        _lp(rows=BASE_ROWS + " q: [ x ^2 + y ^2 ] <= 100\n"),
        _lp(),
        True,
        False,
    ),
    "quadratic_objective_term_dropped": (_lp("Minimize\n 3 x + 2 y + [ x ^2 ] / 2\n"), _lp(), True, False),
    "isolated_variables_class_sizes": (
        "Minimize\n a + b + 2 c\nSubject To\nEnd\n",
        "Minimize\n a + 2 b + 2 c\nSubject To\nEnd\n",
        True,
        False,
    ),
    "coefficient_below_float32_resolution": (
        _lp(),
        _lp(rows=" c1: x + y >= 4\n c2: x + 3.0000004 y >= 6\n"),
        True,
        False,
    ),
    "coefficient_above_float32_resolution": (
        _lp(),
        _lp(rows=" c1: x + y >= 4\n c2: x + 3.000002 y >= 6\n"),
        False,
        False,
    ),
    "integer_versus_continuous": (_lp(tail="Generals\n x y\n"), _lp(), False, False),
    "free_versus_default_lower_bound": (_lp(bounds=" x free\n y free\n"), _lp(), False, False),
}


@pytest.mark.parametrize(("reference", "generated", "trex", "equivalent"), list(G11.values()), ids=list(G11))
def test_g11_edge_case_table(reference: str, generated: str, trex: bool, equivalent: bool) -> None:
    grade = check_trex_compat(parse_lp(reference), parse_lp(generated))
    assert grade.verdict is (Verdict.CORRECT if trex else Verdict.WRONG)


def test_g12_float32_formatting() -> None:
    assert format_float32(-0.0) == "-0.000000"
    assert format_float32(1234567.891) == "1234567.875000"
    assert format_float32(16777217) == "16777216.000000"
    assert format_float32(2.0000006) == "2.000001"
    assert format_float32(math.inf) == "inf"
    assert format_float32(1e100) == "inf"
    assert format_float32(1e-7) == "0.000000"


def test_negative_zero_bound_from_the_sign_bug_breaks_equivalence() -> None:
    # 0 / -2 gives LB = -0.0, which formats as "-0.000000" and differs from "0.000000".
    negated = _lp(rows=BASE_ROWS + " c3: - 2 x >= 0\n")
    plain = _lp(rows=BASE_ROWS + " c3: 2 x >= 0\n")
    assert check_trex_compat(parse_lp(plain), parse_lp(plain)).passed
    grade = check_trex_compat(parse_lp(plain), parse_lp(negated))
    assert compat_info(grade) == {"var_num_check": True, "cons_num_check": True, "wl_check": False}


def test_zero_sum_equality_is_noted_instead_of_writing_a_failure_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = parse_lp(_lp(rows=BASE_ROWS + " c3: x - y = 0\n"))
    grade = check_trex_compat(model, model)
    assert grade.passed
    assert grade.evidence is not None and grade.evidence.kind == "structure"
    notes = [check for check in grade.evidence.checks if check.name == "zero_sum_equalities"]
    assert len(notes) == 1 and "reference 1, generated 1" in notes[0].detail
    assert list(tmp_path.iterdir()) == []


def test_two_empty_models_score_zero_as_the_reference_crash_does() -> None:
    empty = parse_lp("Minimize\nEnd\n")
    grade = check_trex_compat(empty, empty)
    assert grade.verdict is Verdict.WRONG
    assert compat_info(grade) == {"var_num_check": True, "cons_num_check": True}


def test_a_range_row_is_judged_in_gurobis_range_form() -> None:
    # addRange(x + y, 4, 10) is held by Gurobi as x + y + Rg = 10 with 0 <= Rg <= 6.
    ranged = parse_lp(_lp()).model_copy(update={"row_upper": (10.0, math.inf)})
    gurobi_form = parse_lp(_lp(rows=" c1: x + y + Rgc1 = 10\n c2: x + 3 y >= 6\n", bounds=" Rgc1 <= 6\n"))
    assert check_trex_compat(gurobi_form, ranged).passed


def test_evidence_lists_the_reference_info_keys(data_dir: Path) -> None:
    model = _reference(data_dir, 5)
    grade = check_trex_compat(model, model)
    assert grade.evidence is not None and grade.evidence.kind == "structure"
    names = [check.name for check in grade.evidence.checks]
    assert names == [
        "var_num_check",
        "cons_num_check",
        "wl_check",
        "sufficient_check",
        "sufficient_msg.msg1",
        "sufficient_msg.msg2",
    ]
    assert grade.reason.startswith("Equivalent")
