"""Benchmark loading on the real data: golden facts G1-G4, and loader errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark, load_spec, shipped_spec_paths
from trex_eval.errors import BenchmarkError
from trex_eval.records import GraderKind, ObjectiveReference, SolveStatus, StructureReference


def test_shipped_benchmarks_and_row_counts(data_dir: Path) -> None:  # G1
    t_rex = [name for name, path in shipped_spec_paths().items() if "t-rex" in load_spec(path).suites]
    assert set(t_rex) == {"nl4opt", "optibench", "b4o-feasible", "b4o-orgeval"}
    counts = {name: len(load_benchmark(name, data_dir=data_dir)) for name in t_rex}
    assert counts == {"nl4opt": 289, "optibench": 600, "b4o-feasible": 344, "b4o-orgeval": 394}


def test_nl4opt_answers(data_dir: Path) -> None:  # G2
    bench = load_benchmark("nl4opt", data_dir=data_dir)
    refs = [p.reference for p in bench.problems]
    assert all(isinstance(r, ObjectiveReference) and r.value is not None for r in refs)
    values = [r.value for r in refs if isinstance(r, ObjectiveReference)]
    non_integer = [i for i, v in enumerate(values) if v is not None and v != int(v)]
    assert non_integer == [5, 8, 9, 100, 110, 115, 120, 130, 135, 140, 172, 196, 199, 207, 223, 235, 272]
    assert [i for i, v in enumerate(values) if v == 0] == [
        66,
        69,
        76,
        79,
        86,
        89,
        96,
        99,
        243,
        268,
        279,
        284,
        285,
        286,
    ]
    assert [p.id for p in bench.problems] == [str(i) for i in range(289)]
    assert bench.problems[0].reference.label == "3000.0"  # type: ignore[union-attr]
    assert bench.problems[5].reference.label == "2333.33"  # type: ignore[union-attr]
    assert bench.spec.grader.kind is GraderKind.OBJECTIVE


def test_optibench_answers(data_dir: Path) -> None:  # G3
    bench = load_benchmark("optibench", data_dir=data_dir)
    raw = json.loads((data_dir / "data/optibench/OptiBench.json").read_text())
    kinds = Counter(type(row["en_answer"]).__name__ for row in raw)
    assert kinds == {"int": 455, "float": 145}
    first, last = bench.problems[0].reference, bench.problems[-1].reference
    assert isinstance(first, ObjectiveReference) and first.value == 3600
    assert isinstance(last, ObjectiveReference) and last.value == 283200
    assert [p.id for p in bench.problems] == [str(i) for i in range(600)]


def test_orgeval_ids_twins_and_references(data_dir: Path) -> None:  # G4, G6
    bench = load_benchmark("b4o-orgeval", data_dir=data_dir)
    assert [p.id for p in bench.problems] == [f"BENCH4OPT_{i}" for i in range(394)]
    assert [p.meta.get("wp_type", "") for p in bench.problems] == ["", "_concise"] * 197
    refs = [p.reference for p in bench.problems]
    assert all(isinstance(r, StructureReference) for r in refs)
    lp = [r.lp_sha256 for r in refs if isinstance(r, StructureReference)]
    unequal_pairs = [j for j in range(197) if lp[2 * j] != lp[2 * j + 1]]
    assert unequal_pairs == []
    # the 4-group {178, 179, 204, 205}: LP 178 = 179, 204 = 205, 178 != 204, one twin group
    assert lp[178] == lp[179] and lp[204] == lp[205] and lp[178] != lp[204]
    groups = Counter(p.twin_group for p in bench.problems)
    assert sorted(groups.values()) == [2] * 195 + [4]
    assert bench.problems[178].twin_group == bench.problems[204].twin_group
    for j in range(197):
        assert bench.problems[2 * j].twin_group == bench.problems[2 * j + 1].twin_group
    # reference status: the 212 optimal LPs are exactly the solver_test.jsonl ids
    solver_ids = {json.loads(line)["id"] for line in (data_dir / "data/bench4opt/solver_test.jsonl").open()}
    optimal = {
        p.id for p in bench.problems if isinstance(p.reference, StructureReference) and p.reference.status
    }
    assert len(optimal) == 212 and optimal == solver_ids
    assert all(
        p.reference.status is SolveStatus.OPTIMAL
        for p in bench.problems
        if p.id in optimal  # type: ignore[union-attr]
    )
    # instance data is the data.json content
    assert json.loads(bench.problems[0].instance_files["data.json"]) == json.loads(
        (data_dir / "data/bench4opt/lp_data/data_0_problem0.json").read_text()
    )


def test_feasible_rows(data_dir: Path) -> None:  # G5 (data part)
    bench = load_benchmark("b4o-feasible", data_dir=data_dir)
    orgeval = {p.id for p in load_benchmark("b4o-orgeval", data_dir=data_dir).problems}
    ids = {p.id for p in bench.problems}
    assert ids < orgeval
    missing = sorted(int(i.split("_")[1]) for i in orgeval - ids)
    assert missing == [
        0,
        1,
        6,
        7,
        24,
        25,
        74,
        75,
        80,
        81,
        94,
        95,
        96,
        97,
        110,
        111,
        120,
        121,
        144,
        145,
        150,
        151,
        186,
        187,
        194,
        195,
        218,
        219,
        232,
        233,
        260,
        261,
        286,
        287,
        338,
        339,
        340,
        341,
        344,
        345,
        352,
        353,
        354,
        355,
        360,
        361,
        370,
        371,
        382,
        383,
    ]
    by_id = {p.id: p for p in bench.problems}
    assert by_id["BENCH4OPT_2"].reference.value == 531.1536797183472  # type: ignore[union-attr]
    assert by_id["BENCH4OPT_4"].reference.value == 2557441.83620435  # type: ignore[union-attr]
    assert by_id["BENCH4OPT_2"].data_path == "lp_final/data_2_problem2.json"
    assert all(p.reference_code and "data.json" in p.instance_files for p in bench.problems)


def test_dataset_digest_changes_with_data(tmp_path: Path, data_dir: Path) -> None:
    a = load_benchmark("optibench", data_dir=data_dir).sha256
    assert a == load_benchmark("optibench", data_dir=data_dir).sha256
    copy = tmp_path / "data" / "optibench"
    copy.mkdir(parents=True)
    rows = json.loads((data_dir / "data/optibench/OptiBench.json").read_text())
    rows[0]["en_answer"] = 3601
    (copy / "OptiBench.json").write_text(json.dumps(rows))
    assert load_benchmark("optibench", data_dir=tmp_path).sha256 != a


# --------------------------------------------------------------------------- errors


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    return path


def test_malformed_yaml_reports_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\ntitle: [unclosed\n")
    with pytest.raises(BenchmarkError) as excinfo:
        load_spec(path)
    assert f"{path}:" in str(excinfo.value) and "invalid YAML" in str(excinfo.value)


def test_schema_error_reports_file_line_and_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "name: x\ntitle: X\nsource:\n  path: rows.jsonl\nfields:\n  question: q\n"
        "grader:\n  kind: objectiv\n  rule: strict\n  compat_rule: trex-compat\nprompt:\n  task: solve\n",
    )
    with pytest.raises(BenchmarkError) as excinfo:
        load_spec(path)
    message = str(excinfo.value)
    assert f"{path}:8" in message and "grader.kind" in message


def test_unknown_field_is_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "name: x\ntitle: X\nsource:\n  path: rows.jsonl\n  row: 3\nfields:\n  question: q\n"
        "grader:\n  kind: objective\n  rule: strict\n  compat_rule: trex-compat\nprompt:\n  task: solve\n",
    )
    with pytest.raises(
        BenchmarkError, match=r"bench.yaml:5: unknown key 'source.row' \(did you mean 'rows'\?\)"
    ):
        load_spec(path)


def test_missing_data_file(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="source data not found"):
        load_benchmark("nl4opt", data_dir=tmp_path)


def test_unknown_benchmark_lists_known(data_dir: Path) -> None:
    with pytest.raises(BenchmarkError, match=r"(?s)unknown benchmark 'nl4op'.*nl4opt"):
        load_benchmark("nl4op", data_dir=data_dir)


def test_row_count_mismatch_is_an_error_for_shipped_benchmarks(tmp_path: Path, data_dir: Path) -> None:
    copy = tmp_path / "data" / "optibench"
    copy.mkdir(parents=True)
    rows = json.loads((data_dir / "data/optibench/OptiBench.json").read_text())
    (copy / "OptiBench.json").write_text(json.dumps(rows[:-1]))
    with pytest.raises(BenchmarkError, match="expected 600 rows, found 599"):
        load_benchmark("optibench", data_dir=tmp_path)


def test_bad_rows_are_reported_per_row(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "a", "q": "Maximise x", "ans": "1,250.5"}\n'
        '{"id": "b", "q": "Minimise y", "ans": "seven"}\n'
        '{"id": "c", "ans": 3}\n'
        '{"id": "a", "q": "dup", "ans": 1}\n'
        '{"id": "d", "q": "Infeasible one", "ans": "No Best Solution"}\n'
    )
    path = _write(
        tmp_path,
        "name: mine\ntitle: Mine\nsource:\n  path: rows.jsonl\n"
        "fields:\n  id: id\n  question: q\n  answer: ans\n"
        "grader:\n  kind: objective\n  rule: strict\n  compat_rule: trex-compat\nprompt:\n  task: solve\n",
    )
    bench = load_benchmark(str(path), data_dir=None)
    assert [p.id for p in bench.problems] == ["a", "d"]
    assert bench.problems[0].reference.value == 1250.5  # type: ignore[union-attr]
    assert bench.problems[1].reference.status is SolveStatus.INFEASIBLE
    errors = [str(e) for e in bench.row_errors]
    assert errors[0].endswith(
        "rows.jsonl:2: field 'ans': cannot read 'seven' as a number or a status word "
        "(infeasible, unbounded, ...)"
    )
    assert errors[1].endswith("rows.jsonl:3: field 'q': missing")
    assert "rows.jsonl:4: field 'id': duplicate id 'a'" in errors[2]
    with pytest.raises(BenchmarkError, match="3 bad rows"):
        load_benchmark(str(path), data_dir=None, strict=True)
