"""parse_lp against gurobipy 13.0.3 as the oracle: every ORGEval and Feasible reference LP, LP
files gurobipy writes for constructed models, and hand-written files that probe Gurobi's
reading rules. Plus the error contract."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gurobi_models import GUROBI_MODELS
from gurobi_oracle import differences, gurobi_read

from trex_eval.errors import GradingError
from trex_eval.lp import parse_lp


def _reference_lps(data_dir: Path, folder: str) -> list[Path]:
    paths = sorted((data_dir / "data" / folder / "lp_code").glob("*.lp"))
    assert paths, f"no reference LPs under {folder}"
    return paths


@pytest.mark.parametrize(("folder", "count"), [("bench4opt", 394), ("bench4opt_feasible", 344)])
def test_every_reference_lp_reads_as_gurobipy_reads_it(data_dir: Path, folder: str, count: int) -> None:
    paths = _reference_lps(data_dir, folder)
    assert len(paths) == count
    mismatches = {}
    for path in paths:
        text = path.read_text()
        expected = gurobi_read(text)
        assert expected is not None, path
        found = differences(expected, parse_lp(text))
        if found:
            mismatches[path.name] = found[:3]
    assert mismatches == {}


# Each case probes one reading rule; the expected model is whatever gurobipy makes of the text
# (or the rejection when gurobipy rejects it).
def _text(*lines: str) -> str:
    return "\n".join(lines)


CASES = {
    "number_without_name_is_a_name": _text("Minimize", " 2 + y", "Subject To", " c: y >= 1", "End"),
    "glued_coefficient_is_a_name": _text("Minimize", " 3x + y", "Subject To", " c: y >= 1", "End"),
    "glued_and_repeated_signs": _text("Minimize", " +x - -y", "Subject To", " c: y >= 1", "End"),
    "two_numbers_rejected": _text("Minimize", " 2 3 x", "Subject To", " c: y >= 1", "End"),
    "star_in_linear_term_rejected": _text("Minimize", " 3 * x", "Subject To", " c: y >= 1", "End"),
    "constant_term_in_row_is_a_variable": _text("Minimize", " x", "Subject To", " c: x + 5 >= 3", "End"),
    "sense_glued_to_name_rejected": _text("Minimize", " x", "Subject To", " c: x>=3", "End"),
    "sense_glued_to_rhs_rejected": _text("Minimize", " x", "Subject To", " c: x >=3", "End"),
    "reversed_le_rejected": _text("Minimize", " x", "Subject To", " c: x =< 3", "End"),
    "reversed_ge_rejected": _text("Minimize", " x", "Subject To", " c: x => 3", "End"),
    "strict_and_double_equal_senses": _text(
        "Minimize", " x", "Subject To", " c: x < 3", " d: x > 2", " e: x == 1", "End"
    ),
    "label_spellings": _text(
        "Minimize", " x", "Subject To", " c1:x >= 3", " c2 : x >= 3", " c3 :x >= 1", "End"
    ),
    "unnamed_rows_are_numbered": _text(
        "Minimize", " x", "Subject To", " x >= 3", " y <= 2", " c: x + y >= 0", " x + y >= 1", "End"
    ),
    "expression_over_lines": _text("Minimize", " x", "Subject To", " c: x + y", " >=", " 3", "End"),
    "variable_on_rhs_rejected": _text("Minimize", " x", "Subject To", " c: x + y >= 3 x", "End"),
    "number_spellings": _text(
        "Minimize",
        " x",
        "Subject To",
        " c: x + y >= - 3",
        " d: x >= -3",
        " e: x >= + 3",
        " f: x >= 3e0",
        " g: x >= .5",
        " h: x >= 5.",
        " i: x >= 1E2",
        "End",
    ),
    "bound_forms": _text(
        "Minimize",
        " x",
        "Subject To",
        " c: x >= 3",
        "Bounds",
        " x >= 2",
        " x <= 1e+100",
        " x <= inf",
        " y < 3",
        " z > 2",
        " -5 < w < 3",
        " v = 2",
        " u free",
        " t Free",
        " s FREE",
        " 3 >= r",
        " q >= -Inf",
        " p <= -infinity",
        " o >= +infinity",
        "End",
    ),
    "infinite_bounds_clamped": _text(
        "Minimize",
        " x",
        "Subject To",
        " c: x >= 3",
        "Bounds",
        " -inf <= x <= -inf",
        " y >= 1e+99",
        " z >= 2e+30",
        " w <= -2e+30",
        " v >= -1e+30",
        " u <= 1e+30",
        " a <= 1e+20",
        " b <= 5e+19",
        " f >= -1e+20",
        " g >= -5e+19",
        " h >= 1e+20",
        " i <= -1e+20",
        "End",
    ),
    "fixed_at_infinity": _text(
        "Minimize",
        " x + y + z",
        "Subject To",
        " c: x >= 3",
        "Bounds",
        " x = inf",
        " y = -inf",
        " 2 <= z <= 1",
        "End",
    ),
    "huge_objective_and_rhs": _text(
        "Minimize",
        " 1e+99 x + 1e+30 y - 1e+100 z",
        "Subject To",
        " c: x >= 1e+30",
        " d: x >= 1e+99",
        " e: x <= -1e+99",
        " f: x <= -1e+100",
        " g: 1e+101 x >= 1",
        " h: 1e+200 x >= 1",
        "End",
    ),
    "bound_operators_starting_with_equal_fix": _text(
        "Minimize", " x + y + z", "Subject To", " c: x >= 3", "Bounds", " x =< 2", " y => 2", " z == 2", "End"
    ),
    "two_sided_bound_takes_outer_values": _text(
        "Minimize", " x + y", "Subject To", " c: x >= 3", "Bounds", " 5 >= x >= 2", " 2 <= y >= 1", "End"
    ),
    "bound_chain_rejected": _text(
        "Minimize", " x", "Subject To", " c: x >= 3", "Bounds", " x >= 2 <= 5", "End"
    ),
    "bound_with_detached_sign_rejected": _text(
        "Minimize", " x", "Subject To", " c: x >= 3", "Bounds", " x <= - 4", "End"
    ),
    "free_with_value_rejected": _text(
        "Minimize", " x", "Subject To", " c: x >= 3", "Bounds", " x free 3", "End"
    ),
    "binaries_clamp_rounded_bounds": _text(
        "Minimize",
        " x + y + z + w + v + u",
        "st",
        " c: x >= 3",
        "Bounds",
        " x <= 5",
        " y free",
        " z >= -3",
        " -2 <= w <= 0.5",
        " u <= 0.7",
        "Binaries",
        " x y z w v u",
        "End",
    ),
    "binaries_round_with_tolerance": _text(
        "Minimize",
        " a + b + c + d",
        "st",
        " c: a >= 3",
        "Bounds",
        " 1e-10 <= a <= 0.9999999",
        " 0.999999 <= b",
        " 1e-5 <= c <= 1",
        " -1e-10 <= d <= 1.0000000001",
        "Binaries",
        " a b c d",
        "End",
    ),
    "generals_round_bounds": _text(
        "Minimize",
        " a + b + c + d + e + f + g + h",
        "st",
        " c: a >= 3",
        "Bounds",
        " 1.000005 <= a <= 1.999995",
        " 1.000011 <= c <= 1.999989",
        " 1e-10 <= d <= 2.9999999",
        " -1e-10 <= e <= 1.0000000001",
        " 1e+20 <= g <= 1e+25",
        " 0.5 <= h <= 0.5",
        " b <= -1",
        " f free",
        "Generals",
        " a b c d e f g h",
        "End",
    ),
    "type_sections_in_any_order": _text(
        "Minimize",
        " x + y + z",
        "st",
        " c: x >= 3",
        "Generals",
        " x",
        "Binaries",
        " x y",
        "Generals",
        " y",
        "Semi-continuous",
        " z",
        "End",
    ),
    "semi_continuous_and_integer": _text(
        "Minimize",
        " a + b + c + d",
        "st",
        " c: a >= 3",
        "Bounds",
        " 0.5 <= a <= 2.5",
        " 0.5 <= b <= 2.5",
        " d <= 9",
        "Semi-continuous",
        " a b",
        "Generals",
        " b c",
        "Semis",
        " c",
        "Binaries",
        " d",
        "Semi",
        " d",
        "End",
    ),
    "bounds_after_types_rejected": _text(
        "Minimize", " x", "st", " c: x >= 3", "Binaries", " x", "Bounds", " x <= 5", "End"
    ),
    "constraints_after_bounds_rejected": _text(
        "Minimize", " x", "st", " c: x >= 3", "Bounds", " x <= 5", "st", " d: x <= 2", "End"
    ),
    "objective_sections_merge": _text("Minimize", " x", "Maximize", " y", "st", " c: x >= 3", "End"),
    "no_objective_section": _text("st", " c: x >= 3", "End"),
    "no_end": _text("Minimize", " x", "st", " c: x >= 3", ""),
    "text_after_end_ignored": _text("Minimize", " x", "st", " c: x >= 3", "End", " d: x >= 2", ""),
    "no_constraints": _text("Minimize", " x", "End"),
    "empty_objective": _text("Minimize", "End"),
    "empty_text": _text(""),
    "comment_only": _text("\\ only a comment", ""),
    "text_before_header_rejected": _text("x + y", "Subject To", " c1: x >= 1", "End"),
    "lazy_constraints_and_user_cuts_are_rows": _text(
        "Minimize",
        " x",
        "st",
        " c: x >= 3",
        "User Cuts",
        " uc: x + y <= 20",
        "Lazy Constraints 2",
        " lz: x + z <= 10",
        " x + w >= 1",
        "End",
    ),
    "constraints_after_lazy_rejected": _text(
        "Minimize", " a", "st", " c: a >= 3", "Lazy Constraints", " lz: a <= 10", "st", " d: a <= 20", "End"
    ),
    "header_words_case_insensitive": _text(
        "MINIMIZE", " x", "SUBJECT TO", " c1: x >= 1", "BOUNDS", " x <= 4", "GENERALS", " x", "END"
    ),
    "header_spellings": _text(
        "Min", " x", "s.t.", " c: x >= 3", "Bound", " x <= 9", "Gen", " x", "Bin", " y", "Semi", " z", "End"
    ),
    "two_word_header_needs_one_space": _text("Minimize", " x", "Subject  To", " c1: x >= 1", "End"),
    "header_word_inside_expression": _text("Minimize", " x", "Subject To", " c1: x st >= 1", "End"),
    "comments_anywhere": _text(
        "Minimize", " x", "Subject To", " c: x >= 3 \\ comment >= 4", " d: x\\y <= 5", "End"
    ),
    "spaced_objective_label": _text("Minimize", " obj : x", "Subject To", " c: x >= 3", "End"),
    "empty_rows": _text(
        "Minimize", " x", "Subject To", " c1: x >= 1", " empty: >= -4", " zero: <= 3", " z: 0 x >= 4", "End"
    ),
    "names_with_brackets_and_symbols": _text(
        "Minimize",
        " x + 2 x[1] + 3 x[1,2] - y_{a} + 4 flow[Node1->Node2]",
        "Subject To",
        " cap[1,2]: x[1,2] + flow[Node1->Node2] <= 5",
        "End",
    ),
    "repeated_terms_summed_in_order": _text(
        "Minimize",
        " 0.1 x + 0.2 x + 0.3 x",
        "Subject To",
        " c1: 0.1 x + 0.2 x + 0.3 x >= 1",
        " c2: 0.3 y + 0.2 y + 0.1 y + 1e-17 y >= 1",
        " c3: 6e-14 x + 6e-14 x + y >= 1",
        " c4: 2 x - 2 x + y = 1",
        "End",
    ),
    "small_entries_and_negative_zeros": _text(
        "Minimize",
        " - 0 x + 1e-20 y + 1e-300 z",
        "Subject To",
        " c1: 1e-14 x + 1e-20 y + 1e-300 z + 1e-10 w >= -0",
        " c2: x - 1e-13 y <= -0.0",
        " c3: 1e-14 x + 1e-14 x - 2e-14 x + y = 0",
        " c4: 1e+30 x + 1e+21 y >= 1e+30",
        "Bounds",
        " x <= -0",
        " y >= -0",
        " -0 <= z <= 0",
        " w = -0",
        "End",
    ),
    "quadratic_objective_halved": _text(
        "Minimize",
        " [ x * y + y * x - 2 x * y + z ^2 ] / 2 + [ 3 x ^ 2 ] /2",
        "Subject To",
        " c1: x + y + z >= 1",
        "End",
    ),
    "quadratic_objective_without_halving": _text(
        "Minimize", " x + [ 3 x * y ] + [ 4 x ^ 2 ] / 2", "Subject To", " c1: x >= 1", "End"
    ),
    "quadratic_objective_other_divisor_rejected": _text(
        "Minimize", " x + [ x ^2 ] / 4", "Subject To", " c1: x >= 1", "End"
    ),
    "quadratic_constraints_counted": _text(
        "Minimize",
        " x + y",
        "st",
        " c: x >= 3",
        " [ x * y ] >= 2",
        " q: 3 x + [ x ^ 2 ] <= 2",
        " q2: [ x ^2 + 3 y * x - 2 x * w ] + y <= 2",
        " x + y >= 1",
        "End",
    ),
    "malformed_quadratic_terms_rejected": _text(
        "Minimize", " x", "Subject To", " c1: x + [ y z ] >= 1", "End"
    ),
    "unclosed_bracket_rejected": _text("Minimize", " x", "Subject To", " c1: x + [ y * z >= 1", "End"),
    "indicators_counted": _text(
        "Minimize",
        " x",
        "st",
        " c: x >= 3",
        " ind: b = 1 -> x + w >= 2",
        " b = 0 -> x <= 9",
        " x + b >= 1",
        "End",
    ),
    "indicator_value_must_be_binary": _text("Minimize", " x", "Subject To", " c1: y = 2 -> x >= 1", "End"),
    "indicator_needs_equality": _text("Minimize", " x", "Subject To", " c1: y <= 1 -> x >= 1", "End"),
    "indicator_needs_one_variable": _text("Minimize", " x", "Subject To", " c1: y + z = 1 -> x >= 1", "End"),
    "sos_counted": _text(
        "Minimize",
        " x + y",
        "Subject To",
        " c: x >= 3",
        "SOS",
        " s1: S1 :: x:1 q:2",
        " S2 :: x:1 y:2 z:3",
        "End",
    ),
    "sos_weight_must_be_a_number": _text(
        "Minimize", " x", "Subject To", " c: x >= 3", "SOS", " s1: S1 :: x:1 y:a", "End"
    ),
    "general_constraints_counted": _text(
        "Maximize",
        " x",
        "Subject To",
        " c: x >= 3",
        "General Constraints",
        " g1: y = MIN ( x , 2 )",
        " g2: z = ABS ( w )",
        " gn: v = NORM ( 2 ) ( x , u )",
        " gp: p = PWL ( x ) : (0, 1.5) (1, 0) (2, 3)",
        " gpo: r = POLY ( 3 x ^ 3 + 4 x ^ 0 )",
        " ge: t = EXP ( x )",
        " gea: t = EXPA ( 3 ^ q )",
        " gl: t = LOG_2 ( x )",
        " gnl: z = NL : ( PLUS , -1 , -1 ) ( SQRT , -1 , 0 )",
        "  ( VARIABLE , nv , 1 ) ( MULTIPLY , -1 , 0 ) ( VARIABLE , x , 3 )",
        "  ( SIN , -1 , 3 ) ( VARIABLE , nw , 5 )",
        " ga: b0 = AND ( b1 , b2 )",
        " y = MAX ( x , k , 3 )",
        "End",
    ),
    "indicator_in_general_constraints_rejected": _text(
        "Minimize",
        " x",
        "Subject To",
        " c: x >= 3",
        "General Constraints",
        " ind: b = 1 -> x + y >= 2",
        "End",
    ),
    "constant_becomes_objective_constant": _text(
        "Minimize", " Constant + 3 x", "Subject To", " c1: x >= 4", "Bounds", " Constant = 1", "End"
    ),
    "constant_in_a_row_stays_a_variable": _text(
        "Minimize",
        " 3 x + 5 Constant",
        "Subject To",
        " c1: x + Constant >= 4",
        "Bounds",
        " Constant = 1",
        "End",
    ),
    "constant_with_zero_row_entry_removed": _text(
        "Minimize",
        " 3 x + 2 Constant",
        "Subject To",
        " c1: x + 0 Constant >= 4",
        "Bounds",
        " Constant = 1",
        "End",
    ),
    "constant_not_fixed_to_one_stays": _text(
        "Minimize",
        " 3 x + 5 Constant + 2 Constant",
        "Subject To",
        " c1: x >= 4",
        "Bounds",
        " Constant = 2",
        "End",
    ),
    "constant_is_case_sensitive": _text(
        "Minimize", " 3 x + 5 constant + 4 CONSTANT", "Subject To", " c1: x >= 4", "End"
    ),
    "constant_two_sided_fix_and_integer": _text(
        "Minimize",
        " 3 x + 5 Constant",
        "Subject To",
        " c1: x >= 4",
        "Bounds",
        " 1 <= Constant <= 1",
        "Generals",
        " Constant",
        "End",
    ),
    "constant_only_in_bounds": _text(
        "Minimize", " 3 x", "Subject To", " c1: x >= 4", "Bounds", " Constant = 1", "End"
    ),
    "constant_drops_its_quadratic_terms": _text(
        "Minimize",
        " 3 x + 2 Constant + [ x * Constant + Constant ^2 + x ^2 ] / 2",
        "Subject To",
        " c1: x >= 4",
        "Bounds",
        " Constant = 1",
        "End",
    ),
    "duplicate_row_names_kept": _text(
        "Minimize", " x", "Subject To", " c1: x >= 1", " c1: x + y >= 2", " R0: y >= 0", " y <= 9", "End"
    ),
}


@pytest.mark.parametrize("text", list(CASES.values()), ids=list(CASES))
def test_hand_written_lp_reads_as_gurobipy_reads_it(text: str) -> None:
    expected = gurobi_read(text)
    if expected is None:
        with pytest.raises(GradingError):
            parse_lp(text)
    else:
        assert differences(expected, parse_lp(text)) == []


@pytest.mark.parametrize("name", list(GUROBI_MODELS))
def test_lp_files_written_by_gurobipy_read_back_identically(tmp_path: Path, name: str) -> None:
    path = tmp_path / "model.lp"
    GUROBI_MODELS[name]().write(str(path))
    text = path.read_text()
    expected = gurobi_read(text)
    assert expected is not None
    assert differences(expected, parse_lp(text)) == []


def test_known_semantics_without_the_oracle() -> None:
    # Independent of gurobipy: values follow from the LP format rules by hand.
    model = parse_lp(
        "\\ demo\nMaximize\n obj: 3 x + 2 y[1,2] + x + 100 Constant\nSubject To\n"
        " c1: x + y[1,2] + x >= 4\n - x <= -3\nBounds\n y[1,2] <= 10\n Constant = 1\nGenerals\n y[1,2]\nEnd\n"
    )
    assert model.sense == "max"
    assert model.var_names == ("x", "y[1,2]")
    assert model.obj == (4.0, 2.0)
    assert model.objective_constant == 100.0
    assert model.row_names == ("c1", "R1")
    assert (model.row_lower, model.row_upper) == ((4.0, -math.inf), (math.inf, -3.0))
    assert list(zip(model.a_row, model.a_col, model.a_val, strict=True)) == [
        (0, 0, 2.0),
        (0, 1, 1.0),
        (1, 0, -1.0),
    ]
    assert model.vtype == ("C", "I")
    assert model.ub == (math.inf, 10.0)


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("Minimize\n x\nSubject To\n c1: x >=\nEnd", "LP line 5", "a number as the right-hand side"),
        ("Minimize\n x\nSubject To\n c1: x + y\n 3 >= 2\nEnd", "LP line 5", "'+' or '-' between terms"),
        ("Minimize\n x\nSubject To\n c1: x =< 2\nEnd", "LP line 4", "a constraint sense"),
        ("Minimize\n x\nBounds\n x <= five\nEnd", "LP line 4", "a bound value"),
        ("x + y\nSubject To\n c1: x >= 1\nEnd", "LP line 1", "a section header"),
        ("Minimize\n x\nBounds\n x <= 5\nSubject To\n c: x >= 1\nEnd", "LP line 5", "may not follow"),
    ],
)
def test_errors_name_the_line_and_what_was_expected(text: str, line: str, expected: str) -> None:
    with pytest.raises(GradingError) as caught:
        parse_lp(text)
    assert caught.value.where == line
    assert expected in str(caught.value)


def test_general_constraint_bodies_are_counted_not_validated() -> None:
    # Gurobi rejects a POLY over two variables; this reader only counts general constraints
    # and creates the variables they name, so it accepts the file (documented limitation).
    text = (
        "Minimize\n x\nSubject To\n c: x >= 3\nGeneral Constraints\n g: r = POLY ( 3 x ^ 3 + 2 s ^ 1 )\nEnd"
    )
    assert gurobi_read(text) is None
    model = parse_lp(text)
    assert model.n_general_constraints == 1
    assert model.var_names == ("x", "r", "s")
