"""The isolation floor of rewards: below bubblewrap the scorer, its trainer adapters and ``serve``
refuse to start unless the level is named (a rollout that can read the host file system can copy
another's answer); a named level is used and shown in ``/health`` and every epoch's manifest.

"No bubblewrap" is made real, not pretended: the commands run in a private mount namespace in
which every bwrap binary the harness would try is ``/bin/false`` (needs root, as in CI)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from trex_eval.errors import ConfigError, SandboxError
from trex_eval.reward import ScorerSettings
from trex_eval.reward.catalogue import ACCEPT_WEAK_ISOLATION
from trex_eval.sandbox import IsolationReport, probe_isolation
from trex_eval.sandbox.isolation import floor_refusal
from trex_eval.sandbox.launch import find_bwrap, find_tool
from trex_eval.store import RunStore

LP = (
    "```python\nimport highspy\nh = highspy.Highs()\nh.silent()\n"
    "x = h.addVariable(lb=0, ub=3)\ny = h.addVariable(lb=0)\nh.addConstr(x + y <= 4)\n"
    "h.addConstr(x + 3 * y <= 6)\nh.maximize(3 * x + 2 * y)\n"
    "print(h.getInfo().objective_function_value)\n```"
)
"""Optimum 11."""

BWRAP_NOTE = "bwrap /usr/bin/bwrap: exit 1: bwrap: setting up uid map: Permission denied"


def _report(level: str) -> IsolationReport:
    return IsolationReport.model_validate(
        {
            "level": level,
            "command": (),
            "privileged": False,
            "network_blocked": level != "rlimits",
            "root_read_only": level == "unshare",
            "notes": (BWRAP_NOTE,),
            "host_view": f"what {level} shows",
        }
    )


def test_a_level_below_bwrap_is_refused_unless_named() -> None:
    refusal = floor_refusal(
        _report("unshare"), asked="auto", needed_by="rewards", accept=ACCEPT_WEAK_ISOLATION
    )

    assert isinstance(refusal, SandboxError)
    text = str(refusal)
    assert "found isolation level unshare, below bwrap, which rewards need" in text and BWRAP_NOTE in text
    assert "`trex-eval serve --isolation unshare`" in text and "isolation='unshare'" in text
    assert "rlimits" in str(
        floor_refusal(_report("rlimits"), asked="unshare", needed_by="rewards", accept=ACCEPT_WEAK_ISOLATION)
    )
    for level in ("unshare", "rlimits"):
        assert (
            floor_refusal(_report(level), asked=level, needed_by="rewards", accept=ACCEPT_WEAK_ISOLATION)
            is None
        )
    for asked in ("auto", "bwrap"):
        assert (
            floor_refusal(_report("bwrap"), asked=asked, needed_by="rewards", accept=ACCEPT_WEAK_ISOLATION)
            is None
        )


def test_a_misspelt_level_is_refused_never_taken_for_the_weakest() -> None:
    with pytest.raises(ConfigError, match="unknown isolation level 'bwarp'"):
        ScorerSettings(isolation="bwarp")
    with pytest.raises(ConfigError, match="unknown isolation level"):
        ScorerSettings.from_mapping({"isolation": "none"}, what="reward_kwargs")
    with pytest.raises(SandboxError, match="unknown isolation level 'bwarp'"):
        probe_isolation(prefer="bwarp")  # type: ignore[arg-type]


def _without_bwrap(command: list[str]) -> list[str]:
    """``command`` in a private mount namespace where every bwrap binary is ``/bin/false``."""
    false = os.path.realpath(find_tool("false") or "/bin/false")
    covers = "".join(f"mount --bind {false} {shlex.quote(path)} && " for path in find_bwrap())
    unshare = find_tool("unshare") or "unshare"
    return [unshare, "--mount", "--propagation", "private", "sh", "-c", covers + 'exec "$@"', "sh", *command]


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not find_tool("unshare") or not find_bwrap(),
    reason="needs root, util-linux unshare and a bwrap binary to cover",
)

ADAPTERS = f"""\
import json
from trex_eval.errors import SandboxError
from trex_eval.reward import RewardRequest, RewardScorer, ScorerSettings, verl
from trex_eval.reward.records import InlineProblem
from trex_eval.reward.trl import TrlReward
LP = {LP!r}
found = {{}}
def refused(call):
    try:
        call()
    except SandboxError as error:
        return str(error)
    return None
found["scorer"] = refused(lambda: RewardScorer(ScorerSettings(workers=1)).start().close())
trl = TrlReward(ScorerSettings(workers=1))
found["trl"] = refused(lambda: trl(prompts=["p"], completions=[LP], trex_problem=[{{"value": 11}}]))
found["verl"] = refused(lambda: verl.compute_score("inline", LP, 11, workers=1))
with RewardScorer(ScorerSettings(workers=1, isolation="unshare")) as scorer:
    [record] = scorer.score([RewardRequest(problem=InlineProblem(value=11), completion=LP)])
    found["accepted"] = [scorer.describe()["isolation"], record.reward]
print("FOUND " + json.dumps(found))
"""


@needs_root
def test_without_bwrap_the_scorer_and_both_adapters_refuse_and_a_named_level_runs() -> None:
    done = subprocess.run(
        _without_bwrap([sys.executable, "-c", ADAPTERS]), capture_output=True, text=True, timeout=300
    )

    lines = [line for line in done.stdout.splitlines() if line.startswith("FOUND ")]
    assert lines, done.stderr[-3000:]
    found = json.loads(lines[-1][len("FOUND ") :])
    for entry in ("scorer", "trl", "verl"):
        text = found[entry]
        assert text is not None, entry
        assert (
            "found isolation level unshare, below bwrap, which rewards need" in text
            and "--isolation unshare" in text
        )
        assert "bwrap" in text.split("unavailable here:")[1]  # why: each bwrap binary's failure
    assert found["accepted"] == ["unshare", 1.0]


@needs_root
def test_without_bwrap_serve_refuses_and_serves_a_named_level_it_shows(tmp_path: Path) -> None:
    serve = [sys.executable, "-m", "trex_eval", "serve", "--port", "0", "--workers", "1"]
    environment = {**os.environ, "COLUMNS": "200"}
    refused = subprocess.run(
        _without_bwrap(serve), capture_output=True, text=True, timeout=300, env=environment
    )
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "found isolation level unshare, below bwrap, which rewards need" in refused.stderr
    assert "--isolation unshare" in refused.stderr

    out = tmp_path / "rollouts"
    process = subprocess.Popen(
        _without_bwrap([*serve, "--isolation", "unshare", "--out", str(out), "--per-problem", "1"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        port = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert port is not None, (line, process.stderr.read() if process.stderr else "")
        assert "sandbox isolation unshare" in line
        url = f"http://127.0.0.1:{port.group(1)}"
        health = httpx.get(f"{url}/health", timeout=30).json()
        scored = httpx.post(
            f"{url}/v1/score", json={"requests": [{"problem": {"value": 11}, "completion": LP}]}, timeout=120
        )
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=120)

    assert code == 0
    assert health["isolation"] == "unshare"
    assert scored.json()["records"][0]["reward"] == 1.0
    manifest = RunStore(out / "epoch-0001").read_manifest()
    assert manifest.provenance["sandbox"]["isolation"]["level"] == "unshare"
    assert manifest.provenance["backend"]["isolation"] == "unshare"
