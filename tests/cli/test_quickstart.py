"""The README's commands, verbatim, in a fresh copy of the checkout (issue 16): each one that runs
offline exits 0 with what the README says it prints, and none writes under results/published/."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The README lines run here (copied verbatim from it; the test fails when the README changes
# them). The others need a GPU, an API key, a checkpoint or the network.
OFFLINE = (
    "trex-eval run --model reference",
    "trex-eval models",
    "trex-eval benchmarks list",
    "trex-eval benchmarks show b4o-feasible BENCH4OPT_2 --prompt",
    "trex-eval report results/* --out results/report.html",
    "trex-eval grade results/<run-id> --rule rel:1e-6",
    "trex-eval rules",
)


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.startswith("trex-eval ")]


def _fresh_copy(target: Path) -> Path:
    """The files a clone would hold (tracked, and new files git does not ignore), as they are now."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (item.decode() for item in listed)):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.slow
def test_readme_quickstart_runs_verbatim_in_a_fresh_clone(tmp_path: Path, data_dir: Path) -> None:
    commands = _readme_commands()
    assert all(command in commands for command in OFFLINE), set(OFFLINE) - set(commands)
    clone = _fresh_copy(tmp_path / "clone")
    published = _digests(clone / "results" / "published")
    assert published.keys() == {
        "published.csv",
        "audit-default.csv",
        "audit-trex-compat.csv",
        "audit-miplib-nl.csv",
        "audit-miplib-nl-small-gurobi.csv",
    }
    shims = tmp_path / "bin"
    shims.mkdir()
    # `trex-eval` of this copy: `python -m` runs the package in the working directory.
    (shims / "trex-eval").write_text(f'#!/bin/sh\nexec {sys.executable} -m trex_eval "$@"\n')
    (shims / "trex-eval").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "TREX_DATA_DIR": str(data_dir),
        "COLUMNS": "80",
    }
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    for command in OFFLINE:
        if "<run-id>" in command:
            (run_id,) = [p.name for p in (clone / "results").iterdir() if p.name.startswith("reference-")]
            command = command.replace("<run-id>", run_id)
        done = subprocess.run(
            ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        outputs[command.split(" --")[0].split(" results/")[0]] = done

    run = outputs["trex-eval run"].stdout
    # The scores the README promises ("It should print 100% for NL4OPT and OptiBench, 99.42% for ..."),
    # read from its text so that the sentence and the run cannot drift apart.
    promise = re.search(
        r"should print (\S+)% for NL4OPT and OptiBench, (\S+)% for B4O-Feasible and (\S+)% for B4O-ORGEval",
        " ".join((REPO / "README.md").read_text(encoding="utf-8").split()),
    )
    assert promise, "the README no longer states the self-test's scores"
    every, feasible, orgeval = (f"{float(value):.2f}" for value in promise.groups())
    for name, score in (
        ("nl4opt", every),
        ("optibench", every),
        ("b4o-feasible", feasible),
        ("b4o-orgeval", orgeval),
    ):
        assert re.search(rf"^ {name}\s+\d+\s+{score}\s", run, flags=re.MULTILINE), (name, run)
    assert "full summary: results/reference-" in run and "## Definitions" not in run
    assert max(len(line) for line in run.splitlines() if not line.startswith("full summary:")) <= 80
    assert "reference" in outputs["trex-eval models"].stdout
    assert "BENCH4OPT_2" in outputs["trex-eval benchmarks show b4o-feasible BENCH4OPT_2"].stdout
    board = outputs["trex-eval report"]
    assert "skipping results/published: not a run directory" in board.stderr
    assert (clone / "results" / "report.html").is_file()
    assert "stored executions reused" in outputs["trex-eval grade"].stdout
    assert "strict" in outputs["trex-eval rules"].stdout
    # Nothing wrote the published artefacts, and no command left a CSV uninvited.
    assert _digests(clone / "results" / "published") == published
    assert not (clone / "results" / "leaderboard.csv").exists()
