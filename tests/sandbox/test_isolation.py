"""Isolation levels: the start-up probe, and every level exercised for real, including as an
unprivileged user (run through ``setpriv`` with the root-only interpreter directory re-mounted
readable in a private mount namespace; needs root, as in CI)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sandbox_support import marker, processes_with

from trex_eval.sandbox import probe_isolation
from trex_eval.sandbox.launch import find_tool

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = Path(__file__).with_name("unprivileged_payload.py")
UNPRIVILEGED_UID = 61234


def test_probe_picks_a_level_that_blocks_the_network() -> None:
    report = probe_isolation()

    if os.environ.get("CI"):
        assert report.level == "bwrap", report.notes
    if report.level != "rlimits":
        assert report.network_blocked
    assert report.summary().startswith(f"sandbox isolation: {report.level} (")


def test_requested_rlimits_level_says_the_network_is_reachable() -> None:
    report = probe_isolation(prefer="rlimits")

    assert report.level == "rlimits" and report.command == ()
    assert not report.network_blocked and "NETWORK REACHABLE" in report.summary()


def _reachable_for_everyone(paths: list[Path], *, stash: Path) -> str:
    """Shell commands that make ``paths`` reachable for the test user without touching the host:
    in the caller's private mount namespace, a world-traversable tmpfs goes over each ancestor
    that others cannot enter (a home directory, a ``mktemp -d`` checkout), and the child on the
    way to each path is bound back in. Outermost ancestors first, so that inner ones are
    remounted inside the trees bound back. The children wait in folders of ``stash`` (a folder the
    caller removes; directly under /tmp, so never inside an ancestor that is overmounted)."""
    kept: dict[Path, set[Path]] = {}
    for path in (path.resolve() for path in paths):
        for private in path.parents:
            if private != Path("/") and not os.stat(private).st_mode & 0o001:
                kept.setdefault(private, set()).add(private / path.relative_to(private).parts[0])
    commands = []
    for depth, private in enumerate(sorted(kept, key=lambda p: len(p.parts))):
        children = [shlex.quote(str(child)) for child in sorted(kept[private])]
        held = [shlex.quote(str(stash / f"{depth}-{n}")) for n in range(len(children))]
        commands += [f"mkdir {h} && mount --bind {c} {h}" for c, h in zip(children, held, strict=True)]
        commands.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(private))}")
        commands += [f"mkdir -p {c} && mount --bind {h} {c}" for c, h in zip(children, held, strict=True)]
    return "".join(f"{command} && " for command in commands)


def _run_payload(level: str, *, unprivileged: bool) -> dict[str, object]:
    tag = marker()
    with contextlib.ExitStack() as stack, socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        python = [sys.executable, str(PAYLOAD), level, str(port), tag]
        environment = f"env -i PATH=/usr/bin:/bin HOME=/tmp PYTHONPATH={shlex.quote(str(REPO))}"
        if unprivileged:
            remount = _reachable_for_everyone(
                [Path(sys.base_prefix), Path(sys.prefix), REPO],  # interpreter, venv, checkout
                stash=Path(stack.enter_context(tempfile.TemporaryDirectory(dir="/tmp", prefix="trex-test-"))),
            )
            inner = (
                f"{remount}cd /tmp && exec setpriv --reuid={UNPRIVILEGED_UID} --regid={UNPRIVILEGED_UID} "
                f"--clear-groups {environment} {shlex.join(python)}"
            )
            command = [
                find_tool("unshare") or "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                inner,
            ]
        else:
            command = ["sh", "-c", f"cd /tmp && exec {environment} {shlex.join(python)}"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
        listener.settimeout(0.1)
        connected = True
        try:
            listener.accept()[0].close()
        except TimeoutError:
            connected = False
    lines = [line for line in done.stdout.splitlines() if line.startswith("OUTCOME ")]
    assert lines, done.stderr[-2000:]
    outcome: dict[str, object] = json.loads(lines[-1][len("OUTCOME ") :])
    outcome["host_saw_connection"] = connected
    outcome["survivors"] = processes_with(tag)
    return outcome


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not find_tool("setpriv"), reason="needs root and setpriv"
)


@needs_root
@pytest.mark.parametrize("level", ["bwrap", "unshare", "rlimits"])
def test_every_level_works_for_an_unprivileged_user(level: str) -> None:
    outcome = _run_payload(level, unprivileged=True)

    assert outcome["uid"] == UNPRIVILEGED_UID and outcome["level"] == level
    assert outcome["solve"] == ["ok", [4.0]]
    assert outcome["jobs"]["nproc_enforced"] and outcome["jobs"]["job_pid_namespace"]  # type: ignore[index]
    assert outcome["bomb"] == "runtime_error"  # fork() fails with EAGAIN at max_processes
    assert outcome["escape"] == "ok" and outcome["survivors"] == []
    if level == "rlimits":
        assert outcome["network_blocked"] is False
    else:
        assert outcome["network_blocked"] is True
        assert outcome["connect"] == "runtime_error" and outcome["host_saw_connection"] is False


@needs_root
def test_root_without_namespaces_polls_the_process_count() -> None:
    outcome = _run_payload("rlimits", unprivileged=False)

    assert outcome["jobs"]["nproc_enforced"] is False  # type: ignore[index]
    # The worker counts the processes and kills the job; with a cgroup per worker, fork() may fail
    # at pids.max first (either stops the bomb).
    cgroups = outcome["fair_share"]["cgroups"]  # type: ignore[index]
    assert outcome["bomb"] in (("runtime_error", "killed") if cgroups else ("killed",))
    assert outcome["survivors"] == []
    assert outcome["solve"] == ["ok", [4.0]]
