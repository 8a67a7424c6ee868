"""``run`` and ``grade`` say at which sandbox isolation level their programs ran, in one line of
their terminal summary, the level the run manifest records (real CLI, real sandbox)."""

from __future__ import annotations

from pathlib import Path

from cli_process import trex_eval

from trex_eval.store import RunStore


def test_run_and_grade_state_the_isolation_level_the_manifest_records(tmp_path: Path, data_dir: Path) -> None:
    env = {"TREX_DATA_DIR": str(data_dir)}
    run_dir = tmp_path / "run"
    done = trex_eval(
        "run", "--model", "reference", "-b", "nl4opt", "--limit", "1", "--no-progress",
        "-o", str(run_dir), env=env, columns=200,
    )  # fmt: skip
    level = RunStore(run_dir).read_manifest().provenance["sandbox"]["isolation"]["level"]
    lines = [line for line in done.stdout.splitlines() if line.startswith("sandbox isolation: ")]
    assert len(lines) == 1 and lines[0].startswith(f"sandbox isolation: {level}"), done.stdout

    # Only the rule changes: every stored execution is reused and no program runs again.
    graded = trex_eval(
        "grade", str(run_dir), "--rule", "rel:1e-4", "--no-progress", "-o", str(tmp_path / "regraded"),
        env=env, columns=200,
    )  # fmt: skip
    assert f"sandbox isolation: no program ran this session (executions reused from {run_dir}" in (
        graded.stdout
    ), graded.stdout
