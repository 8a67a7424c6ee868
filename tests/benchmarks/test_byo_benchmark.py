"""Bring-your-own benchmarks as a library: YAML-only benchmarks over the example data in every
supported file format, messy answer labels, per-row problems, validation and registration."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from trex_eval.benchmarks import Benchmark, load_benchmark, user_benchmarks_dir
from trex_eval.benchmarks import user as userbench
from trex_eval.errors import BenchmarkError, ConfigError
from trex_eval.prompting.render import PromptRenderer
from trex_eval.protocols.plan import plan_for, rules_by_protocol
from trex_eval.records import ObjectiveReference, SolveStatus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "or-word-problems"
IDS = [
    "product-mix",
    "diet",
    "transportation",
    "assignment",
    "knapsack",
    "night-shift",
    "flour-mill",
    "facility-location",
    "overtime",
    "production-plan",
]

SPEC = """\
name: {name}
title: Example in another format
source:
  path: {path}
fields:
  id: id
  question: question
  answer: answer
  instance: data_file
grader:
  kind: objective
  rule: strict
  compat_rule: trex-compat
prompt:
  task: solve
"""


def _load(name: str) -> Benchmark:
    return load_benchmark(str(EXAMPLE / f"{name}.yaml"), data_dir=None)


def _references(bench: Benchmark) -> dict[str, ObjectiveReference]:
    refs = {p.id: p.reference for p in bench.problems}
    assert all(isinstance(r, ObjectiveReference) for r in refs.values())
    return refs  # type: ignore[return-value]


@pytest.fixture()
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private user config directory, so that registrations never touch the real one."""
    folder = tmp_path / "config"
    monkeypatch.setenv("TREX_CONFIG_DIR", str(folder))
    return folder


# --------------------------------------------------------------------------- the example data


def test_messy_labels_read_as_the_clean_answers() -> None:
    messy, clean = _references(_load("messy")), _references(_load("benchmark"))
    assert list(messy) == list(clean) == IDS
    expected = {  # label in messy.jsonl -> what it means
        "product-mix": ("4,100", 4100.0),
        "diet": ("$4.40", 4.4),
        "transportation": ("6.3e2", 630.0),
        "assignment": ("34", 34.0),
        "knapsack": (" 60.0 ", 60.0),
        "night-shift": ("No Best Solution", SolveStatus.INFEASIBLE),
        "flour-mill": ("Unbounded", SolveStatus.UNBOUNDED),
        "facility-location": ("4.9E+02", 490.0),
        "overtime": ("-0", 0.0),
        "production-plan": ("1,655.00", 1655.0),
    }
    for pid, (label, meaning) in expected.items():
        ref = messy[pid]
        assert ref.label == label
        if isinstance(meaning, SolveStatus):
            assert ref.status is meaning and ref.value is None
        else:
            assert ref.status is SolveStatus.OPTIMAL and ref.value == meaning
        assert (ref.status, ref.value) == (clean[pid].status, clean[pid].value)
    assert math.copysign(1.0, messy["overtime"].value or 0.0) == 1.0  # "-0" is not negative zero


def test_instance_file_only_where_a_row_names_one() -> None:
    bench = _load("messy")
    with_files = {p.id: p.instance_files for p in bench.problems if p.instance_files}
    assert with_files == {
        "facility-location": {"data.json": (EXAMPLE / "instances" / "facility.json").read_text()}
    }
    assert bench.get("facility-location").data_path == "instances/facility.json"


def test_prompts_render_with_the_default_set() -> None:
    bench = _load("messy")
    assert bench.spec.prompt.default_set == "neutral"
    renderer = PromptRenderer(bench, "neutral")
    for problem in bench.problems:
        prompt = renderer.render(problem)
        user = prompt.messages[-1].content
        assert prompt.prompt_set == "neutral" and problem.question in user
        assert ("data.json" in user) == (problem.id == "facility-location")


# --------------------------------------------------------------------------- file formats


def _rows() -> list[dict[str, str | None]]:
    rows = [json.loads(line) for line in (EXAMPLE / "problems.jsonl").read_text().splitlines()]
    return [
        {
            "id": r["id"],
            "question": r["question"],
            "answer": str(r["answer"]),
            "data_file": r.get("data_file"),
        }
        for r in rows
    ]


def _write_format(folder: Path, kind: str) -> str:
    """Writes the example rows as ``kind`` into ``folder``; returns the YAML ``source.path``."""
    rows = _rows()
    if kind == "csv":
        pd.DataFrame(rows).to_csv(folder / "rows.csv", index=False)
        return "rows.csv"
    if kind == "parquet":
        pd.DataFrame(rows).to_parquet(folder / "rows.parquet")
        return "rows.parquet"
    if kind == "json":
        (folder / "rows.json").write_text(json.dumps({"problems": rows}))
        return "rows.json"
    (folder / "parts").mkdir()
    for part, chunk in (("a.jsonl", rows[:4]), ("b.jsonl", rows[4:])):
        (folder / "parts" / part).write_text("".join(json.dumps(r) + "\n" for r in chunk))
    shutil.copytree(EXAMPLE / "instances", folder / "parts" / "instances")
    return "parts"


@pytest.mark.parametrize("kind", ["csv", "parquet", "json", "folder"])
def test_every_format_gives_the_same_problems(tmp_path: Path, kind: str) -> None:
    shutil.copytree(EXAMPLE / "instances", tmp_path / "instances")
    path = _write_format(tmp_path, kind)
    (tmp_path / "bench.yaml").write_text(SPEC.format(name=f"example-{kind}", path=path))
    bench = load_benchmark(str(tmp_path / "bench.yaml"), data_dir=None)
    reference = _load("benchmark")

    def essence(b: Benchmark) -> list[tuple[object, ...]]:
        return [
            (p.id, p.index, p.question, p.reference.status, p.reference.value, p.instance_files)  # type: ignore[union-attr]
            for p in b.problems
        ]

    assert bench.row_errors == ()
    assert essence(bench) == essence(reference)


def test_unreadable_lines_are_row_problems_in_every_text_format(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text('id,question,answer\na,"Maximise x",1\nb,"Minimise y",2,surplus\n')
    (tmp_path / "rows.json").write_text('[{"id": "c", "question": "q", "answer": 3}, "not a row"]')
    for name, source in (("csv", "rows.csv"), ("json", "rows.json")):
        (tmp_path / f"{name}.yaml").write_text(
            SPEC.format(name=name, path=source).replace("  instance: data_file\n", "")
        )
    csv_bench = load_benchmark(str(tmp_path / "csv.yaml"), data_dir=None)
    assert [p.id for p in csv_bench.problems] == ["a"]
    assert [str(e) for e in csv_bench.row_errors] == [
        f"{tmp_path / 'rows.csv'}:3: field '(row)': 4 values for 3 header columns"
    ]
    json_bench = load_benchmark(str(tmp_path / "json.yaml"), data_dir=None)
    assert [p.id for p in json_bench.problems] == ["c"]
    assert [str(e) for e in json_bench.row_errors] == [
        f"{tmp_path / 'rows.json'}[1]: field '(row)': expected a JSON object, found string"
    ]


# --------------------------------------------------------------------------- per-row problems


MALFORMED = [  # (line of malformed.jsonl, field, start of the message), as written into the file
    (2, "answer", "cannot read 'about 4.40 dollars' as a number or a status word"),
    (3, "question", "missing"),
    (4, "answer", "missing"),
    (5, "id", "duplicate id 'product-mix' (first at "),
    (6, "(row)", "invalid JSON: Expecting ',' delimiter (column 79)"),
    (7, "data_file", "file not found: "),
    (8, "data_file", "path '../../README.md' leaves the benchmark folder"),
    (10, "question", "expected text, got list"),
    (11, "(row)", "expected a JSON object, found array"),
]


def test_malformed_rows_are_reported_and_the_rest_loads() -> None:
    bench = _load("malformed")
    assert [p.id for p in bench.problems] == ["product-mix", "facility-location", "knapsack"]
    source = EXAMPLE / "malformed.jsonl"
    found = [(e.where, e.field, e.message) for e in bench.row_errors]
    assert len(found) == len(MALFORMED)
    for (where, field, message), (line, want_field, want_start) in zip(found, MALFORMED, strict=True):
        assert (where, field) == (f"{source}:{line}", want_field)
        assert message.startswith(want_start), message
    with pytest.raises(BenchmarkError, match="9 bad rows in benchmark 'or-word-problems-malformed'"):
        load_benchmark(str(EXAMPLE / "malformed.yaml"), data_dir=None, strict=True)


# --------------------------------------------------------------------------- validate


def test_validate_reports_rows_rules_and_prompt() -> None:
    report = userbench.validate(str(EXAMPLE / "malformed.yaml"), data_dir=None, rules=rules_by_protocol)
    assert report.rows_read == 12 and len(report.benchmark.problems) == 3 and len(report.row_errors) == 9
    assert report.source == EXAMPLE / "malformed.jsonl"
    assert dict(report.rules) == {
        "default": "strict@3",
        "trex-compat": "trex-compat@1",
        "orlm": "orlm-compat@2",
    }
    assert [(p.prompt_set, p.problem_id) for p in report.prompts] == [("neutral", "product-mix")]
    assert report.notes == ()


def test_validate_notes_a_row_count_mismatch_and_a_shipped_name(tmp_path: Path) -> None:
    text = (EXAMPLE / "benchmark.yaml").read_text().replace("rows: 10", "rows: 12")
    text = text.replace("path: problems.jsonl", f"path: {EXAMPLE / 'problems.jsonl'}")
    (tmp_path / "b.yaml").write_text(text.replace("name: or-word-problems", "name: nl4opt"))
    report = userbench.validate(str(tmp_path / "b.yaml"), data_dir=None)
    assert report.notes == (
        "source.rows says 12 rows, 10 are usable",
        "'nl4opt' is also a shipped benchmark's name: results would not tell them apart",
    )


@pytest.mark.parametrize(
    ("edit", "error", "message"),
    [
        (("question: question", "question: prompt"), BenchmarkError, r"no usable row in .*problems\.jsonl"),
        (("rule: strict", "rule: strcit"), ConfigError, "unknown grading rule 'strcit'"),
        (("default_set: neutral", "default_set: neutrl"), ConfigError, "unknown prompt set 'neutrl'"),
        (("kind: objective", "kind: objectiv"), BenchmarkError, r"b\.yaml:\d+: field 'grader\.kind'"),
    ],
)
def test_validate_refuses_what_no_run_could_use(
    tmp_path: Path, edit: tuple[str, str], error: type[Exception], message: str
) -> None:
    text = (
        (EXAMPLE / "benchmark.yaml")
        .read_text()
        .replace("path: problems.jsonl", f"path: {EXAMPLE}/problems.jsonl")
    )
    assert edit[0] in text
    (tmp_path / "b.yaml").write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(error, match=message):
        userbench.validate(str(tmp_path / "b.yaml"), data_dir=None, rules=rules_by_protocol)


def _edited_example(tmp_path: Path, *edits: tuple[str, str]) -> tuple[Path, list[str]]:
    """The example YAML reading the example data from anywhere, with ``edits`` applied; its path
    and lines."""
    text = (
        (EXAMPLE / "benchmark.yaml")
        .read_text()
        .replace("path: problems.jsonl", f"path: {EXAMPLE}/problems.jsonl")
    )
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    (tmp_path / "b.yaml").write_text(text)
    return tmp_path / "b.yaml", text.splitlines()


def test_every_problem_of_a_file_at_once_unknown_keys_with_a_guess(tmp_path: Path) -> None:
    path, lines = _edited_example(
        tmp_path,
        ("title:", "titel:"),
        ("  question: question", "  questoin: question"),
        ("  rows: 10", "  rows: 10\n  colour: red"),
        ("kind: objective", "kind: objectiv"),
    )
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(str(path), data_dir=None)

    def at(start: str) -> str:
        return f"{path}:{1 + next(i for i, line in enumerate(lines) if line.startswith(start))}: "

    assert caught.value.where == str(path)
    assert caught.value.message.splitlines() == [
        "4 problems in the benchmark file:",
        f"    {at('titel:')}unknown key 'titel' (did you mean 'title'?)",
        f"    {at('  colour:')}unknown key 'source.colour' (known here: path, root, repository, rows, "
        "format, layout, folder_glob, folder_files)",
        f"    {at('  questoin:')}unknown key 'fields.questoin' (did you mean 'question'?)",
        f"    {at('  kind:')}field 'grader.kind': Input should be 'objective' or 'structure' "
        "(got 'objectiv')",
    ]
    # The keys the misspellings stand for are not reported missing as well.
    assert "required" not in str(caught.value)


def test_a_bad_rule_is_located_in_the_file(tmp_path: Path) -> None:
    for key, value, bad in (("rule", "strict", "strcit"), ("compat_rule", "trex-compat", "trex-compt")):
        path, lines = _edited_example(tmp_path, (f"  {key}: {value}", f"  {key}: {bad}"))
        where = f"{path}:{1 + lines.index(f'  {key}: {bad}')}: grader.{key}"
        with pytest.raises(ConfigError, match=f"unknown grading rule '{bad}'") as caught:
            userbench.validate(str(path), data_dir=None, rules=rules_by_protocol)
        assert caught.value.where == where
        # A run binds the rule when it plans the benchmark: located the same way there.
        protocol = "default" if key == "rule" else "trex-compat"
        with pytest.raises(ConfigError) as planned:
            plan_for(load_benchmark(str(path), data_dir=None), protocol=protocol)
        assert planned.value.where == where


def test_a_missing_data_file_of_a_users_benchmark_says_what_applies(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / "problems.jsonl", tmp_path / "problems.jsonl")
    text = (EXAMPLE / "benchmark.yaml").read_text().replace("path: problems.jsonl", "path: problem.jsonl")
    (tmp_path / "b.yaml").write_text(text)
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(str(tmp_path / "b.yaml"), data_dir=None)
    line = 1 + text.splitlines().index(
        "  path: problem.jsonl      # relative to this file's folder (root: file is the default)"
    )
    assert caught.value.where == f"{tmp_path / 'b.yaml'}:{line}: source.path"
    assert caught.value.hint == (
        "source.path is relative to the YAML file's folder; fix source.path in b.yaml to name your "
        f"data file ({tmp_path} holds problems.jsonl)"
    )
    assert "data verify" not in str(caught.value)


def test_a_missing_upstream_template_of_a_users_benchmark_names_its_key(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / "problems.jsonl", tmp_path / "problems.jsonl")
    text = (EXAMPLE / "benchmark.yaml").read_text() + (
        "  upstream:\n    template: prompts/mine.txt\n    style: user-only\n"
        '    substitutions: {"{{Question}}": question}\n'
    )
    (tmp_path / "b.yaml").write_text(text)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    bench = load_benchmark(str(tmp_path / "b.yaml"), data_dir=data_dir)
    assert not bench.shipped
    with pytest.raises(BenchmarkError) as caught:
        PromptRenderer(bench, "t-rex")
    line = 1 + text.splitlines().index("    template: prompts/mine.txt")
    expected = data_dir / "prompts" / "mine.txt"
    assert caught.value.where == f"{tmp_path / 'b.yaml'}:{line}: prompt.upstream.template"
    assert caught.value.hint == (
        f"prompt.upstream.template in b.yaml is relative to the data directory ({data_dir}): put the "
        f"template at {expected} or fix the path, or choose a project prompt set, e.g. --prompt-set neutral"
    )
    assert "data verify" not in str(caught.value)


def test_a_missing_upstream_template_of_a_shipped_benchmark_checks_the_data(
    data_dir: Path, tmp_path: Path
) -> None:
    bench = load_benchmark("nl4opt", data_dir=data_dir)
    assert bench.shipped
    # The shipped benchmark read against a data directory that lacks its template.
    with pytest.raises(BenchmarkError, match="cannot read upstream template") as caught:
        PromptRenderer(dataclasses.replace(bench, data_root=tmp_path), "t-rex")
    assert caught.value.hint is not None and "trex-eval data verify" in caught.value.hint


def test_a_row_count_mismatch_of_a_users_benchmark_names_the_key(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE / "problems.jsonl", tmp_path / "problems.jsonl")
    shutil.copytree(EXAMPLE / "instances", tmp_path / "instances")
    text = (EXAMPLE / "benchmark.yaml").read_text().replace("rows: 10", "rows: 12")
    (tmp_path / "b.yaml").write_text(text)
    with pytest.raises(BenchmarkError, match="expected 12 rows, found 10") as caught:
        load_benchmark(str(tmp_path / "b.yaml"), data_dir=None, strict=True)
    assert (
        caught.value.where
        == f"{tmp_path / 'b.yaml'}:{1 + text.splitlines().index('  rows: 12')}: source.rows"
    )
    assert caught.value.hint == "set source.rows in b.yaml to 10 if the data file is right"


# --------------------------------------------------------------------------- register


def test_registered_copy_reads_the_same_data_from_anywhere(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registration = userbench.register(userbench.validate(str(EXAMPLE / "benchmark.yaml"), data_dir=None))
    assert registration.name == "or-word-problems" and not registration.replaced
    assert (
        registration.path
        == config_dir / "benchmarks" / "or-word-problems.yaml"
        == user_benchmarks_dir() / "or-word-problems.yaml"
    )
    assert registration.changes == (f"source.path: problems.jsonl -> {EXAMPLE / 'problems.jsonl'}",)
    monkeypatch.chdir(tmp_path)  # nothing may depend on where the command runs
    by_name = load_benchmark("or-word-problems", data_dir=None)
    original = _load("benchmark")
    assert by_name.problems == original.problems
    assert by_name.spec.model_dump(exclude={"source"}) == original.spec.model_dump(exclude={"source"})


def test_register_under_another_name_and_replace(config_dir: Path) -> None:
    report = userbench.validate(str(EXAMPLE / "messy.yaml"), data_dir=None)
    first = userbench.register(report, name="mine")
    assert load_benchmark("mine", data_dir=None).name == "mine"
    assert first.changes[0] == "name: or-word-problems-messy -> mine"
    with pytest.raises(BenchmarkError, match="'mine' is already registered"):
        userbench.register(report, name="mine")
    digest = load_benchmark("mine", data_dir=None).sha256
    assert userbench.register(report, name="mine", replace=True).replaced
    assert load_benchmark("mine", data_dir=None).sha256 == digest  # same file, same data: same digest
    assert userbench.unregister("mine") == first.path and not first.path.exists()
    with pytest.raises(BenchmarkError, match="no registered benchmark named 'mine'"):
        userbench.unregister("mine")


@pytest.mark.parametrize(
    ("name", "message"), [("nl4opt", "shipped benchmark"), ("../up", "cannot be a benchmark name")]
)
def test_register_refuses_shipped_and_unsafe_names(config_dir: Path, name: str, message: str) -> None:
    report = userbench.validate(str(EXAMPLE / "benchmark.yaml"), data_dir=None)
    with pytest.raises(BenchmarkError, match=message):
        userbench.register(report, name=name)
    assert not (config_dir / "benchmarks").exists() or not any((config_dir / "benchmarks").iterdir())
