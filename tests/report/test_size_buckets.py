"""MIPLIB-NL beside the small benchmarks, cut by size bucket (issue 49), through the real CLI: a
reference run of four chosen MIPLIB-NL instances (``--problems``) under a stated budget
(``--rule budgeted:20,verify=20``, one rule although it holds a comma) and an NL4OPT run, put in
one leaderboard whose Markdown, CSV and HTML show pass@1 per size bucket with the rule and budget
in the header.

Expected numbers come from the construction: flugpl, gr4x6 (small) and air03 (medium) are
reference programs that reproduce their labels; b-ball (small) is a documented reference-program
miss (``benchmarks/notes/known-issues.yaml``: half-quarters against quarters)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.cli.options import split_rules

CHOSEN = "flugpl,gr4x6,b-ball,air03"
RULE = "budgeted@1:cpu=20,verify=20"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sized")
    env = {"TREX_DATA_DIR": str(data_dir)}
    miplib, nl4opt = root / "miplib", root / "nl4opt"
    trex_eval(
        "run", "--model", "reference", "-b", "miplib-nl", "--problems", CHOSEN,
        "--rule", "budgeted:20,verify=20", "--gurobi", "highs", "--no-progress", "-o", str(miplib),
        env=env, timeout=600,
    )  # fmt: skip
    trex_eval(
        "run", "--model", "reference", "-b", "nl4opt", "--limit", "2", "--no-progress", "-o", str(nl4opt),
        env=env,
    )  # fmt: skip
    return miplib, nl4opt


def test_the_manifest_records_each_problems_bucket(runs: tuple[Path, Path]) -> None:
    manifest = json.loads((runs[0] / "manifest.json").read_text(encoding="utf-8"))
    (entry,) = manifest["settings"]["benchmarks"]
    assert entry["rule"] == RULE and entry["problems"] == 4
    assert entry["size_buckets"]["names"] == ["small", "medium", "large", "huge"]
    assert {entry["size_buckets"]["of"][name] for name in ("flugpl", "gr4x6", "b-ball")} == {"small"}
    assert entry["size_buckets"]["of"]["air03"] == "medium"
    # The limits recorded are the ones the rule set (each row's memory is its bucket's).
    assert (entry["limits"]["cpu_s"], entry["limits"]["wall_s"]) == (20.0, 90.0)


def test_leaderboard_cuts_miplib_nl_by_size_beside_nl4opt(runs: tuple[Path, Path], tmp_path: Path) -> None:
    board_csv, board_html = tmp_path / "board.csv", tmp_path / "board.html"
    shown = trex_eval(
        "leaderboard", *map(str, runs), "--md", "--no-published",
        "--out", str(board_csv), "--out", str(board_html), columns=200,
    ).stdout  # fmt: skip
    section = shown.split("## By instance size", 1)[1].split("## Runs", 1)[0]
    assert f"### miplib-nl by size ({RULE})" in section
    assert "| Model | small | medium | large | huge |" in section
    assert "66.67 (n=3) | 100.00 (n=1) | - (n=0) | - (n=0) |" in section
    assert "nl4opt by size" not in section  # no buckets: no table
    (row,) = (r for r in csv.DictReader(board_csv.open(encoding="utf-8")) if r["miplib-nl.n"])
    assert float(row["miplib-nl.size.small.pass@1_pct"]) == pytest.approx(200 / 3)
    assert (row["miplib-nl.size.small.n"], row["miplib-nl.size.medium.n"], row["miplib-nl.size.huge.n"]) == (
        "3",
        "1",
        "0",
    )
    assert row["miplib-nl.size.huge.pass@1_pct"] == ""
    html = board_html.read_text(encoding="utf-8")
    assert 'id="by-size"' in html and f"miplib-nl by size ({RULE})" in html and "66.67 (n=3)" in html


def test_problems_chosen_by_id_are_checked(data_dir: Path) -> None:
    env = {"TREX_DATA_DIR": str(data_dir)}
    left_out = trex_eval(
        "run", "--model", "reference", "-b", "miplib-nl", "--problems", "flugpl,bab1", env=env, expect=2
    )
    assert "problem 'bab1' of benchmark 'miplib-nl' is left out: data file absent" in left_out.stderr
    unknown = trex_eval(
        "run", "--model", "reference", "-b", "miplib-nl", "--problems", "nosuch", env=env, expect=2
    )
    assert (
        "benchmark 'miplib-nl' has no problem 'nosuch'" in unknown.stderr
        and "ids look like" in unknown.stderr
    )
    two = trex_eval(
        "run", "--model", "reference", "-b", "miplib-nl,nl4opt", "--problems", "flugpl", env=env, expect=2
    )
    assert "--problems chooses problems of one benchmark; this run has 2" in two.stderr


def test_rule_flags_keep_a_rules_comma_separated_parameters() -> None:
    assert split_rules(["strict,budgeted:60,verify=30"]) == ("strict", "budgeted:60,verify=30")
    assert split_rules(["strict:rtol=1e-3,atol=1e-6", "rel"]) == ("strict:rtol=1e-3,atol=1e-6", "rel")
    assert split_rules([" a , ", "b"]) == ("a", "b")
    # A parameter with no rule before it stays a part of its own (and is refused as a rule later).
    assert split_rules(["verify=30,strict"]) == ("verify=30", "strict")
