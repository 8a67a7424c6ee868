"""`trex-eval benchmarks validate | add | list | show | remove` as a user runs them: the real CLI in a
subprocess, a private config directory, the example benchmark of examples/or-word-problems."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from cli_process import trex_eval

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "or-word-problems"

Cli = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture()
def cli(tmp_path: Path) -> Cli:
    """Runs ``python -m trex_eval ARGS`` in ``tmp_path`` with a private TREX_CONFIG_DIR and a wide
    terminal (rich would wrap long paths at 80 columns)."""
    env = {"TREX_CONFIG_DIR": str(tmp_path / "config")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return trex_eval(*args, columns=250, env=env, cwd=tmp_path, expect=None)

    return run


def test_validate_lists_each_bad_row_and_succeeds(cli: Cli) -> None:
    done = cli("benchmarks", "validate", str(EXAMPLE / "malformed.yaml"))
    assert done.returncode == 0, done.stderr
    assert "3 problems; 9 rows with problems" in done.stdout
    assert "(12 rows read)" in done.stdout
    assert f"rows skipped (paths relative to {EXAMPLE})" in done.stdout
    for line, field in ((2, "answer"), (3, "question"), (6, "(row)"), (8, "data_file"), (11, "(row)")):
        row = next(r for r in done.stdout.splitlines() if f" malformed.jsonl:{line} " in r)
        assert f" {field} " in row
    assert "prompt [neutral] user" in done.stdout  # the first usable problem rendered
    assert "A furniture workshop makes desks" in done.stdout


def test_invalid_yaml_exits_2_with_file_line_and_field(cli: Cli, tmp_path: Path) -> None:
    text = (EXAMPLE / "benchmark.yaml").read_text().replace("kind: objective", "kind: objectiv")
    (tmp_path / "bad.yaml").write_text(text)
    line = 1 + text.splitlines().index("  kind: objectiv")
    done = cli("benchmarks", "add", str(tmp_path / "bad.yaml"))
    assert done.returncode == 2
    assert f"bad.yaml:{line}: field 'grader.kind'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "config" / "benchmarks").exists()


def test_every_schema_problem_is_listed_in_one_run(cli: Cli, tmp_path: Path) -> None:
    text = (EXAMPLE / "benchmark.yaml").read_text()
    text = text.replace("  question: question", "  questoin: question").replace("title:", "titel:")
    (tmp_path / "two.yaml").write_text(text)
    lines = text.splitlines()
    done = cli("benchmarks", "validate", str(tmp_path / "two.yaml"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "2 problems in the benchmark file:" in done.stderr
    for start, message in (
        ("titel:", "unknown key 'titel' (did you mean 'title'?)"),
        ("  questoin:", "unknown key 'fields.questoin' (did you mean 'question'?)"),
    ):
        line = 1 + next(i for i, text in enumerate(lines) if text.startswith(start))
        assert f"two.yaml:{line}: {message}" in done.stderr


def test_no_usable_row_exits_2(cli: Cli, tmp_path: Path) -> None:
    text = (EXAMPLE / "benchmark.yaml").read_text()
    text = text.replace("question: question", "question: text").replace(
        "problems.jsonl", str(EXAMPLE / "problems.jsonl")
    )
    (tmp_path / "wrong-fields.yaml").write_text(text)
    done = cli("benchmarks", "validate", str(tmp_path / "wrong-fields.yaml"))
    assert done.returncode == 2
    assert "no usable row" in done.stderr and "field 'text': missing" in done.stderr


def test_add_list_show_replace_remove(cli: Cli, tmp_path: Path) -> None:
    added = cli("benchmarks", "add", str(EXAMPLE / "benchmark.yaml"))
    assert added.returncode == 0, added.stderr
    registered = tmp_path / "config" / "benchmarks" / "or-word-problems.yaml"
    assert f"registered benchmark 'or-word-problems': {registered}" in added.stdout
    copy = yaml.safe_load(registered.read_text())
    assert copy["source"]["path"] == str(EXAMPLE / "problems.jsonl")
    assert copy["fields"] == yaml.safe_load((EXAMPLE / "benchmark.yaml").read_text())["fields"]

    listed = cli("benchmarks", "list")
    row = next(r for r in listed.stdout.splitlines() if "or-word-problems" in r)
    assert "registered" in row and " 10 " in row and "strict" in row
    assert any("nl4opt" in r and "shipped" in r for r in listed.stdout.splitlines())

    shown = cli("benchmarks", "show", "or-word-problems", "facility-location", "--prompt")
    assert shown.returncode == 0, shown.stderr
    assert "instance file data.json" in shown.stdout and '"fixed_cost"' in shown.stdout
    assert "prompt [neutral] user" in shown.stdout

    again = cli("benchmarks", "add", str(EXAMPLE / "benchmark.yaml"))
    assert again.returncode == 2 and "already registered" in again.stderr and "--replace" in again.stderr
    replaced = cli("benchmarks", "add", str(EXAMPLE / "benchmark.yaml"), "--replace")
    assert replaced.returncode == 0 and "replaced benchmark 'or-word-problems'" in replaced.stdout

    removed = cli("benchmarks", "remove", "or-word-problems")
    assert removed.returncode == 0 and not registered.exists()
    assert "or-word-problems" not in cli("benchmarks", "list").stdout


def test_add_refuses_a_shipped_name(cli: Cli, tmp_path: Path) -> None:
    done = cli("benchmarks", "add", str(EXAMPLE / "messy.yaml"), "--name", "optibench")
    assert done.returncode == 2 and "'optibench' is the name of a shipped benchmark" in done.stderr
    assert not (tmp_path / "config" / "benchmarks" / "optibench.yaml").exists()


def test_list_keeps_names_whole_on_an_80_column_terminal(tmp_path: Path) -> None:
    done = trex_eval(
        "benchmarks", "list", columns=80, env={"TREX_CONFIG_DIR": str(tmp_path / "config")}, cwd=tmp_path
    )
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    first_cells = {line.split()[0] for line in lines if line.strip()}
    assert {"b4o-feasible", "b4o-orgeval", "nl4opt", "optibench"} <= first_cells
    assert any("orgeval-trex-compat" in line for line in lines)  # the longest rule name, unfolded
    assert "prompt sets of every benchmark: gurobipy, neutral, ortools, pulp" in done.stdout
    assert "also t-rex: b4o-feasible, b4o-orgeval, nl4opt, optibench" in done.stdout


def test_help_paragraphs_wrap_at_the_terminal_not_at_the_source(cli: Cli) -> None:
    done = cli("compare", "--help")
    assert done.returncode == 0, done.stderr
    # One paragraph of the docstring, wrapped over two source lines, on one 250-column line.
    assert "per benchmark and overall, the difference with a paired bootstrap CI" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("run", "--model", "reference", "--protocol", "x"),
            "unknown protocol 'x'\n  -> use default, trex-compat or orlm",
        ),
        (("run", "--model", "reference", "--few-shot-strategy", "y"), "use random or similar"),
        (
            ("run", "--model", "reference", "--gurobi", "z"),
            "unknown --gurobi policy 'z'\n  -> use auto, real or highs",
        ),
        (("audit", "--gurobi", "z"), "unknown --gurobi policy 'z'"),
        (("grade", "--completions", "c.jsonl", "--protocol", "w"), "unknown protocol 'w'"),
    ],
)
def test_unknown_choices_are_user_errors(cli: Cli, args: tuple[str, ...], message: str) -> None:
    done = cli(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
