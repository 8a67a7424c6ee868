"""verl 0.9's own reward loop awaiting ``trex_eval.reward.verl.compute_score_async``: verl's
``RewardLoopWorker`` loads the function through its ``load_reward_manager`` and
``get_custom_reward_fn`` from the file path its config names (the documented
``reward.custom_reward_function``), its ``naive`` manager awaits one call per rollout, all at once
inside the running loop, on rows that ``export-rl --layout verl`` wrote; then verl loads the same
function by package (``pkg://trex_eval.reward.verl``).

verl runs in an interpreter of its own that also has trex-eval (``TREX_VERL_PYTHON``): verl 0.9.1
installed with ``--no-deps`` beside CPU torch, tensordict, omegaconf, transformers, aiohttp and
codetiming, none of its GPU stack (``scripts/verl_reward_loop_smoke.py`` says what it builds)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ci_required import required
from cli_process import trex_eval

from tests.reward.test_server import BENCH, LP
from trex_eval import config
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark

REPO = Path(__file__).resolve().parents[2]


def _verl_python() -> Path:
    """The interpreter named by ``TREX_VERL_PYTHON``, checked to import verl 0.9 and trex-eval."""
    named = config.getenv("TREX_VERL_PYTHON")
    in_ci = "CI must run it: .ci/run builds the verl virtualenv and sets TREX_VERL_PYTHON"
    required(named is not None and Path(named).is_file(), "TREX_VERL_PYTHON is not set", in_ci=in_ci)
    assert named is not None
    probe = subprocess.run(
        [named, "-c", "import verl, trex_eval.reward.verl; print(verl.__version__)"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    required(
        probe.returncode == 0 and probe.stdout.strip().startswith("0.9."),
        f"{named} does not import verl 0.9 and trex-eval: {(probe.stdout + probe.stderr)[-300:]}",
        in_ci=in_ci,
    )
    return Path(named)


@pytest.mark.slow
def test_verl_reward_loop_awaits_compute_score_async_on_exported_rows(tmp_path: Path, data_dir: Path) -> None:
    python = _verl_python()
    exported = tmp_path / "b4o-verl.jsonl"
    trex_eval(
        "export-rl", "-b", BENCH, "--layout", "verl", "--out", str(exported), "--data-dir", str(data_dir)
    )
    rows = [json.loads(line) for line in exported.read_text().splitlines()[:2]]
    problems = load_benchmark(BENCH, data_dir=data_dir).problems[:2]
    rollouts = [
        {
            "data_source": row["data_source"],
            "ground_truth": row["reward_model"]["ground_truth"],
            "extra_info": row["extra_info"],
            "completion": completion,
        }
        for row, completion in (
            (rows[0], reference_completion_text(problems[0])),
            (rows[1], reference_completion_text(problems[1])),
            (rows[0], "```python\nprint(12)\n```"),  # prints a number, solves nothing
        )
    ]
    rollouts.append({"ground_truth": "11", "completion": LP})  # an inline optimum, no extra_info
    (tmp_path / "rollouts.json").write_text(json.dumps(rollouts))
    reward_kwargs = {"benchmarks": [BENCH], "data_dir": str(data_dir), "workers": 2}
    (tmp_path / "kwargs.json").write_text(json.dumps(reward_kwargs))

    done = subprocess.run(
        [
            str(python),
            str(REPO / "scripts" / "verl_reward_loop_smoke.py"),
            *(str(tmp_path / f) for f in ("rollouts.json", "kwargs.json")),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])

    assert answer["verl"].startswith("0.9.") and answer["manager"] == "NaiveRewardManager"
    assert answer["awaited"] is True  # verl's manager awaits it: no executor thread per rollout
    assert [r["reward_score"] for r in answer["results"]] == [1.0, 1.0, 0.0, 1.0]
    assert [r["reward_extra_info"] for r in answer["results"]] == [
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
        {"score": 0.0, "correct": 0.0, "graded": 1.0},
        {"score": 1.0, "correct": 1.0, "graded": 1.0},
    ]
    assert answer["package_first"] == {"score": 1.0, "correct": 1.0, "graded": 1.0}
