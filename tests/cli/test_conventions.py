"""One convention per concept, through the real command in a subprocess: -h everywhere, flags
without a type, install hints that keep their extra, exit codes that tell a script what happened
(0 done, 1 failed, 2 cannot start), dry runs that price a run, torn and empty completions files,
re-grade directories of their own, and audits that are never ranked."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_process import trex_eval

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "or-word-problems"
COMMANDS = (
    "run",
    "grade",
    "audit",
    "models",
    "rules",
    "leaderboard",
    "compare",
    "report",
    "benchmarks",
    "data",
)
CODE = "response.choices.0.message.content"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_h_and_shows_flags_without_a_type(command: str) -> None:
    done = trex_eval(command, "-h", columns=120)
    assert "Usage:" in done.stdout
    assert "<bool>" not in done.stdout  # a flag takes no value: none is shown


def test_an_install_hint_keeps_its_extra(tmp_path: Path) -> None:
    done = trex_eval(
        "run", "--model", "vllm/Qwen/Qwen2.5-7B-Instruct", "-b", "nl4opt", "--limit", "1",
        env={"TREX_VLLM_EXECUTABLE": str(tmp_path / "no-vllm-here")}, cwd=tmp_path, expect=2,
    )  # fmt: skip
    assert "trex-eval[vllm]" in done.stderr


def test_a_dry_run_prices_the_run_and_exits_2_when_it_cannot_start(tmp_path: Path, data_dir: Path) -> None:
    done = trex_eval(
        "run", "--model", "deepseek-v4-flash-api", "--dry-run", "-b", "nl4opt", "--limit", "3",
        "--price", "0.27/1.10", "--data-dir", str(data_dir),
        env={"DEEPSEEK_API_KEY": ""}, cwd=tmp_path, expect=2,
    )  # fmt: skip
    assert "requests: 3 (3 problems x 1 sample(s))" in done.stdout
    assert re.search(r"prompt tokens: [\d,]+ \(an estimate", done.stdout)
    assert "completion tokens: at most 28,800" in done.stdout
    assert "price:" in done.stdout and "$0.27 / $1.1 per million tokens" in done.stdout
    assert "cannot start" in done.stderr and "DEEPSEEK_API_KEY" in done.stderr
    assert not (tmp_path / "results").exists()


def test_a_dry_run_that_can_start_exits_0(tmp_path: Path, data_dir: Path) -> None:
    done = trex_eval(
        "run", "--model", "reference", "--dry-run", "-b", "nl4opt", "--limit", "2",
        "--data-dir", str(data_dir), cwd=tmp_path,
    )  # fmt: skip
    assert "requests: 2" in done.stdout and "nothing was started" in done.stdout


def _completions(tmp_path: Path, *, torn: bool) -> Path:
    lines = (EXAMPLE / "completions-coptpy.jsonl").read_text().splitlines()
    path = tmp_path / "answers.jsonl"
    text = "\n".join(lines[:3]) + "\n"
    path.write_text(text + (lines[3][: len(lines[3]) // 2] if torn else ""))
    return path


def _grade(source: Path, *extra: str, expect: int | None = 0, cwd: Path) -> object:
    return trex_eval(
        "grade", str(source), "-b", str(EXAMPLE / "benchmark.yaml"), "--id-field", "task_id",
        "--text-field", CODE, "--no-progress", *extra, cwd=cwd, expect=expect, timeout=300,
    )  # fmt: skip


def test_a_torn_last_line_is_refused_unless_allowed_and_then_counted_missing(tmp_path: Path) -> None:
    source = _completions(tmp_path, torn=True)
    refused = _grade(source, expect=2, cwd=tmp_path)
    assert f"{source}:4" in refused.stderr and "--allow-torn-line" in refused.stderr  # type: ignore[attr-defined]

    _grade(source, "--allow-torn-line", "--out", str(tmp_path / "graded"), cwd=tmp_path)
    summary = json.loads((tmp_path / "graded" / "summary.json").read_text())
    assert summary["torn_lines"] == 1
    (bench,) = summary["benchmarks"]
    assert bench["problems"] == 4 and bench["missing_samples"] == 1  # the cut answer stays in the denominator


def test_a_torn_line_of_a_problem_earlier_lines_hold_is_not_called_missing(tmp_path: Path) -> None:
    """Issue 46: a cut-off second record of the problem line 1 holds is no missing problem at one
    sample per problem, and one missing sample of it at two."""
    first = (EXAMPLE / "completions-coptpy.jsonl").read_text().splitlines()[0]
    source = tmp_path / "answers.jsonl"
    source.write_text(first + "\n" + first[: len(first) // 2])
    for samples, says, missing in (
        ("1", "nothing is missing: earlier lines hold the 1 sample(s) of problem 'product-mix'", 0),
        (
            "2",
            "problem 'product-mix' is graded from its earlier lines; 1 of its 2 samples count as missing",
            1,
        ),
    ):
        out = tmp_path / f"k{samples}"
        done = _grade(source, "--allow-torn-line", "-k", samples, "--out", str(out), cwd=tmp_path)
        assert f"the last line of answers.jsonl is cut off and was skipped ({says})" in done.stderr  # type: ignore[attr-defined]
        assert "counts as missing" not in done.stderr  # type: ignore[attr-defined]
        (bench,) = json.loads((out / "summary.json").read_text())["benchmarks"]
        assert (bench["problems"], bench["missing_samples"]) == (1, missing)


def test_an_empty_completions_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    done = _grade(empty, expect=2, cwd=tmp_path)
    assert "holds no completion records" in done.stderr  # type: ignore[attr-defined]
    assert "(the file has ;" not in done.stderr  # type: ignore[attr-defined]


def test_a_missing_field_names_the_grade_option(tmp_path: Path) -> None:
    source = _completions(tmp_path, torn=False)
    done = trex_eval(
        "grade", str(source), "-b", str(EXAMPLE / "benchmark.yaml"), "--no-progress",
        cwd=tmp_path, expect=2,
    )  # fmt: skip
    assert "no field 'problem_id'" in done.stderr and "--id-field" in done.stderr


def test_grades_get_directories_named_after_their_source_and_audits_are_never_ranked(tmp_path: Path) -> None:
    source = _completions(tmp_path, torn=False)
    _grade(source, cwd=tmp_path)
    (graded,) = (tmp_path / "results").iterdir()
    assert re.fullmatch(r"answers-grade-\d{8}-\d{6}-[0-9a-f]+", graded.name), graded.name
    trex_eval("grade", str(graded), "--rule", "orlm", "--no-progress", cwd=tmp_path, timeout=300)
    regraded = [path for path in (tmp_path / "results").iterdir() if path != graded]
    assert len(regraded) == 1 and regraded[0].name.startswith(f"{graded.name}-regrade-")
    assert not list((tmp_path / "results").rglob(".lock"))  # finished runs keep no lock file

    audit = tmp_path / "results" / "audit-x"
    shutil.copytree(graded, audit)
    (audit / "audit.csv").write_text("benchmark,id,verdict\n")
    board = trex_eval(
        "leaderboard", *map(str, sorted((tmp_path / "results").iterdir())), columns=200, cwd=tmp_path
    )
    assert "skipping" in board.stderr and "audit-x" in board.stderr
    # Not ranked: only the closing command (this command line again, with --out) names it.
    ranked = [line for line in board.stdout.splitlines() if not line.startswith("definitions and run")]
    assert "audit-x" not in "\n".join(ranked)
