"""parse_mps against gurobipy 13.0.3 on MPS files written by gurobipy and by HiGHS, and on
hand-written files that probe the MPS rules (markers, bound types, ranges, sections)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gurobi_models import GUROBI_MODELS
from gurobi_oracle import differences, gp, gurobi_env, gurobi_read

from trex_eval.errors import GradingError
from trex_eval.lp import parse_mps

highspy = pytest.importorskip("highspy")


def test_mps_written_by_gurobipy_and_highs_for_every_reference_lp(data_dir: Path, tmp_path: Path) -> None:
    paths = sorted((data_dir / "data" / "bench4opt" / "lp_code").glob("*.lp"))
    assert len(paths) == 394
    mismatches = {}
    highs_files = 0
    for path in paths:
        model = gp.read(str(path), gurobi_env())
        written = {"gurobipy": tmp_path / "g.mps"}
        model.write(str(written["gurobipy"]))
        if model.NumQConstrs == 0 and model.NumQNZs == 0:
            highs = highspy.Highs()
            highs.setOptionValue("output_flag", False)
            highs.readModel(str(written["gurobipy"]))
            written["highs"] = tmp_path / "h.mps"
            highs.writeModel(str(written["highs"]))
            highs_files += 1
        for writer, file in written.items():
            text = file.read_text()
            expected = gurobi_read(text, suffix=".mps")
            assert expected is not None, (path.name, writer)
            found = differences(expected, parse_mps(text))
            if found:
                mismatches[(path.name, writer)] = found[:3]
    assert highs_files > 380
    assert mismatches == {}


@pytest.mark.parametrize("name", list(GUROBI_MODELS))
def test_mps_of_constructed_models(tmp_path: Path, name: str) -> None:
    path = tmp_path / "model.mps"
    GUROBI_MODELS[name]().write(str(path))
    text = path.read_text()
    expected = gurobi_read(text, suffix=".mps")
    assert expected is not None
    assert differences(expected, parse_mps(text)) == []


CASES = {
    "markers_ranges_and_second_objective": """NAME t
ROWS
 N obj
 N obj2
 L c1
 G c2
 E c3
 E c4
 L c5
COLUMNS
 x obj 1 c1 1
 x c2 1
 MARKER 'MARKER' 'INTORG'
 y obj 2 c1 1
 z c3 1
 MARKER 'MARKER' 'INTEND'
 w obj2 5 c4 1
 v c5 1
RHS
 rhs obj 10 c1 4
 rhs c2 1 c3 3
 rhs c4 2
 rhs c5 7
RANGES
 rng c1 2 c2 3
 rng c3 -4 c4 5
BOUNDS
 UP bnd x -3
 UP bnd w 4.5
 MI bnd v
ENDATA
""",
    "every_bound_type": """NAME
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1
 b obj 1 c1 1
 MARKER 'MARKER' 'INTORG'
 c c1 1
 d c1 1
 e c1 1
 MARKER 'MARKER' 'INTEND'
 f c1 1
 g c1 1
 h c1 1
 i c1 1
 j c1 1
 k c1 1
 l c1 1
RHS
 RHS c1 -5
BOUNDS
 LO BND a 2
 UP BND a -3
 UP BND c 7
 UP BND d -2
 PL BND e
 BV BND f
 LI BND g -3
 UI BND h 5.5
 SC BND i 9
 FX BND j 4
 FR BND k
 MI BND l
 UP BND l 5
 UP BND zz 3
ENDATA
""",
    "negative_upper_bound_and_lower_bound_order": """NAME
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1
 b obj 1 c1 1
 c obj 1 c1 1
 MARKER 'MARKER' 'INTORG'
 d c1 1
 e c1 1
 MARKER 'MARKER' 'INTEND'
RHS
 RHS c1 -5
BOUNDS
 LO BND a 0
 UP BND a -3
 UP BND b -3
 LO BND b 0
 UP BND c 5
 BV BND c
 UP BND d 0.5
 LO BND e 0.5
ENDATA
""",
    "objsense_section_and_semicontinuous_zero": """NAME
OBJSENSE
    MAX
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1
 b obj -0 c1 1
RHS
 RHS c1 -5 obj 3
BOUNDS
 UP BND a 0
 SC BND b 0
ENDATA
""",
    "inline_objsense_and_duplicate_entries": """NAME
OBJSENSE MAXIMIZE
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1
 a c1 2 obj 5
 b c1 1
RHS
 RHS c1 -5 obj -0.0
ENDATA
""",
    "small_entries_and_constant_column": """NAME
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1e-14
 b obj 1e-20 c1 0
 Constant obj 5 c1 0
RHS
 RHS c1 -5
BOUNDS
 FX BND Constant 1
ENDATA
""",
    "rhs_without_set_name_rejected": """NAME
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1
RHS
 c1 -5
ENDATA
""",
    "unknown_rows_ignored_and_repeated_rows_kept": """NAME
ROWS
 N obj
 L c1
 L c1
COLUMNS
 a obj 1 c9 1
 b c1 2
RHS
 RHS c9 3 c1 4
ENDATA
""",
    "unknown_quadratic_column_rejected": """NAME
ROWS
 N obj
 L c1
COLUMNS
 a obj 1 c1 1
QUADOBJ
 a zz 3
ENDATA
""",
}


@pytest.mark.parametrize("text", list(CASES.values()), ids=list(CASES))
def test_hand_written_mps_reads_as_gurobipy_reads_it(text: str) -> None:
    expected = gurobi_read(text, suffix=".mps")
    if expected is None:
        with pytest.raises(GradingError):
            parse_mps(text)
    else:
        assert differences(expected, parse_mps(text)) == []


def test_mps_errors_name_the_line() -> None:
    with pytest.raises(GradingError) as caught:
        parse_mps("NAME\nROWS\n N obj\n L c1\nCOLUMNS\n a obj one\nENDATA\n")
    assert caught.value.where == "MPS line 6"
    assert "expected a number" in str(caught.value)
