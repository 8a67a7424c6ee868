"""`trex-eval grade RUN` keeps the run's protocol unless --protocol names another, and says which.

A reference-model run of three b4o-orgeval problems under ``trex-compat`` (whose structure rule
differs from the default protocol's) is re-graded through the real CLI, with and without
``--protocol``.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_process import trex_eval

from trex_eval.backends.base import BackendSpec
from trex_eval.records import SamplingParams
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

REFERENCE = BackendSpec(name="reference", backend="reference", model="reference", sampling=SamplingParams())


def _protocol(run_dir: Path) -> str:
    protocol: str = json.loads((run_dir / "manifest.json").read_text())["settings"]["protocol"]
    return protocol


def _rules(run_dir: Path) -> set[str]:
    return {record.grade.rule for record in RunStore(run_dir).iter_samples()}


def _grade(run_dir: Path, out: Path, data_dir: Path, *extra: str) -> str:
    done = trex_eval(
        "grade",
        str(run_dir),
        "--diagnose",
        *extra,
        "-o",
        str(out),
        "--no-progress",
        "--data-dir",
        str(data_dir),
        columns=200,
        cwd=out.parent,
    )
    return done.stderr


def test_regrade_keeps_the_runs_protocol_and_says_so(tmp_path: Path, data_dir: Path) -> None:
    compat = tmp_path / "compat"
    pipeline.run(
        RunSpec(model=REFERENCE, benchmarks=("b4o-orgeval",), limit=3, protocol="trex-compat"),
        RunOptions(data_dir=data_dir, out=compat, show_progress=False),
    )
    compat_rules = _rules(compat)

    kept = tmp_path / "kept"
    stderr = _grade(compat, kept, data_dir)
    assert "note: re-grading under protocol trex-compat (the run's own)\n" in stderr
    assert _protocol(kept) == "trex-compat" and _rules(kept) == compat_rules

    named = tmp_path / "named"
    stderr = _grade(compat, named, data_dir, "--protocol", "default")
    assert "note: re-grading under protocol default (the run used trex-compat; --protocol given)\n" in stderr
    assert _protocol(named) == "default"
    assert _rules(named).isdisjoint(compat_rules)  # the protocols grade b4o-orgeval differently
