"""Default deny (issue 13): under bubblewrap a program sees only the allow-list of
``launch.view_arguments``: no answer key anywhere, not the harness, no host unix socket.

Each program here is what an attacker would write; it runs through the real pool."""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import STAND_IN, require_bwrap

from trex_eval.benchmarks.data import resolve_data_dir
from trex_eval.errors import DataError
from trex_eval.records import ExecStatus
from trex_eval.sandbox import (
    Job,
    SandboxLimits,
    SandboxPool,
    instances,
    launch,
    probe_isolation,
    site_entries,
)
from trex_eval.sandbox.runtime import hooks

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
SITE = sysconfig.get_paths()["purelib"]


def _data_dir() -> Path | None:
    """The data directory ``trex-eval run`` would use (the same rule as every data test)."""
    try:
        return resolve_data_dir()
    except DataError:
        return None


def _secret_names() -> set[str]:
    """File names only the benchmark data (and copies of it) have."""
    names = {"samples.jsonl", "completions.jsonl", "published.csv", "solver_test.jsonl"}
    for root in filter(None, [_data_dir(), REPO / "results"]):
        for _, _, files in os.walk(root):
            names.update(
                name for name in files if name.endswith((".json", ".jsonl", ".csv", ".parquet", ".lp"))
            )
    return names - {"test.jsonl", "test.json", "data.json"}  # generic names libraries might ship


NEEDLES = ["BENCH4OPT_2", '"optimal_value": 531.1536797183472', "vs reference 531.1536797183472"]
"""An id, a label line of the Bench4Opt data and a graded answer of the committed results."""


@pytest.fixture(scope="module")
def deny_pool() -> Iterator[SandboxPool]:
    hidden = tuple(str(path) for path in filter(None, [_data_dir(), REPO / "results"]))
    with SandboxPool(
        limits=SandboxLimits(wall_s=90.0, cpu_s=80.0, output_bytes=400_000),
        workers=1,
        hidden=hidden,
        highs_package=STAND_IN,
    ) as started:
        require_bwrap(started)
        yield started


def _outcome(pool: SandboxPool, code: str) -> dict[str, object]:
    execution = pool.run(Job(code=code, expect="any"))
    assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail[-2000:])
    lines = [line for line in execution.stdout_tail.splitlines() if line.startswith("OUTCOME ")]
    assert lines, execution.stdout_tail[-2000:]
    found: dict[str, object] = json.loads(lines[-1][len("OUTCOME ") :])
    return found


WALK = """
import json, os, stat, time
names, needles = set({names!r}), [n.encode() for n in {needles!r}]
deadline, here = time.monotonic() + 60, os.getcwd()
hits, files, scanned, sockets, complete = [], 0, 0, [], True
for folder, dirs, entries in os.walk("/", onerror=lambda error: None):
    # Not /proc, nor this program's own directory (its source holds what it looks for).
    dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", here)]
    if time.monotonic() > deadline:
        complete = False
        break
    for name in entries + dirs:
        path = os.path.join(folder, name)
        if name in names:
            hits.append(("name", path))
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISSOCK(info.st_mode):
            sockets.append(path)
        if not stat.S_ISREG(info.st_mode) or name not in entries:
            continue
        files += 1
        if info.st_size > 4 << 20 or name.endswith((".so", ".pyc", ".a", ".o")) or ".so." in name:
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        if data[:4] == b"\\x7fELF":
            continue
        scanned += 1
        hits.extend(("content", path) for needle in needles if needle in data)
found = dict(hits=hits, files=files, scanned=scanned, sockets=sockets, complete=complete)
print("OUTCOME " + json.dumps(found))
"""


def test_a_walk_of_the_whole_view_finds_no_answer_key(deny_pool: SandboxPool) -> None:
    if _data_dir() is None:
        if os.environ.get("CI"):
            pytest.fail("benchmark data not found: the leak test must run in CI")
        pytest.skip("needs the benchmark data (TREX_DATA_DIR, ../shared/benchmarks/t-rex or `data pull`)")
    outcome = _outcome(deny_pool, WALK.format(names=sorted(_secret_names()), needles=NEEDLES))

    assert outcome["complete"], "the walk did not finish in time"
    assert outcome["files"] > 10_000 and outcome["scanned"] > 1_000  # it did read the view
    assert outcome["hits"] == [] and outcome["sockets"] == []


def test_the_harness_and_every_data_folder_are_out_of_reach(deny_pool: SandboxPool) -> None:
    targets = [
        REPO / "pyproject.toml",
        REPO / "trex_eval" / "__init__.py",
        REPO / "trex_eval" / "benchmarks",
        REPO / "results" / "published" / "published.csv",
        REPO / "results",
        REPO / "benchmarks",
        SHARED,
        SHARED / "benchmarks",
        Path(SITE) / "_editable_impl_trex_eval.pth",
        Path(SITE) / "trex_eval",
        *(
            [_data_dir(), _data_dir() / "data" / "bench4opt_feasible" / "test.jsonl"]  # type: ignore[operator]
            if _data_dir()
            else []
        ),
        *(Path(p) for p in ("/srv", "/mnt", "/opt", "/var/run", "/run", "/var/lib", "/home", "/etc/shadow")),
    ]
    code = f"""
import json, os, sys
reached = []
for path in {[str(t) for t in targets]!r}:
    try:
        if os.path.isdir(path):
            if os.listdir(path):
                reached.append(path)
        else:
            open(path, "rb").close()
            reached.append(path)
    except OSError:
        pass
imports = []
for attempt in range(2):
    try:
        from trex_eval.benchmarks import load_benchmark
        imports.append(attempt)
    except ImportError:
        pass
    sys.path.insert(0, {str(REPO)!r})  # the checkout, as the harness has it
print("OUTCOME " + json.dumps(dict(reached=reached, imports=imports)))
"""
    outcome = _outcome(deny_pool, code)

    assert outcome == {"reached": [], "imports": []}


@pytest.fixture
def host_sockets() -> Iterator[list[socket.socket]]:
    """World-writable listening unix sockets of the host: in its /tmp and in the checkout."""
    folders = [
        Path(tempfile.mkdtemp(prefix="sock-", dir="/tmp")),
        Path(tempfile.mkdtemp(prefix=".sock-", dir=REPO)),
    ]
    listeners = []
    for folder in folders:
        os.chmod(folder, 0o777)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(folder / "host.sock"))
        os.chmod(folder / "host.sock", 0o777)
        listener.listen(8)
        listener.setblocking(False)
        listeners.append(listener)
    yield listeners
    for listener, folder in zip(listeners, folders, strict=True):
        listener.close()
        (folder / "host.sock").unlink()
        folder.rmdir()


def test_no_host_unix_socket_can_be_reached(
    deny_pool: SandboxPool, host_sockets: list[socket.socket]
) -> None:
    known = [str(listener.getsockname()) for listener in host_sockets]
    code = f"""
import json, os, socket, stat
candidates = {known!r} + ["/run/docker.sock", "/var/run/docker.sock", "/tmp/.X11-unix/X0"]
for folder, dirs, names in os.walk("/", onerror=lambda error: None):
    if folder == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
    for name in names + dirs:
        try:
            if stat.S_ISSOCK(os.lstat(os.path.join(folder, name)).st_mode):
                candidates.append(os.path.join(folder, name))
        except OSError:
            pass
connected = []
for path in candidates:
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        try:
            client = socket.socket(socket.AF_UNIX, kind)
        except OSError:  # the jobs' seccomp filter refuses AF_UNIX sockets
            continue
        try:
            client.connect(path)
            connected.append(path)
        except OSError:
            pass
        finally:
            client.close()
print("OUTCOME " + json.dumps(dict(connected=connected, walked=len(candidates))))
"""
    outcome = _outcome(deny_pool, code)

    assert outcome["connected"] == []
    for listener in host_sockets:
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_the_bound_host_paths_are_exactly_the_allow_list(deny_pool: SandboxPool) -> None:
    report = deny_pool.isolation_report
    exposed = [Path(path) for path in report.exposed]
    allowed_in_repo = {
        REPO / "gurobipy_highs",
        launch.RUNTIME_DIR,
        STAND_IN.resolve(),
        Path(sysconfig.get_paths()["data"]) / "pyvenv.cfg",
        *(Path(entry) for entry in site_entries.solver_entries(SITE)),
        # Data files handed to programs by reference (<cache>/instances; CI keeps its cache in the
        # checkout): benchmark data only, never labels (trex_eval/sandbox/instances.py).
        instances.store_root().absolute(),
    }

    assert report.readable_hidden == () and report.warnings == ()
    assert not [p for p in exposed if p.is_relative_to(REPO) and p not in allowed_in_repo]
    assert not [p for p in exposed if p.is_relative_to(SHARED) or SHARED.is_relative_to(p)]
    assert not [p for p in exposed if Path(SITE) == p or (REPO.is_relative_to(p))]
    for path in exposed:
        for prefix in ("/run", "/var", "/srv", "/mnt", "/opt", "/home", "/usr/local", "/usr/share/doc"):
            assert not path.is_relative_to(prefix) or path == Path("/usr/share/zoneinfo/Etc/UTC"), path
    entries = {p.name for p in exposed if p.parent == Path(SITE)}
    assert {"numpy", "highspy", "gurobipy", "pulp", "ortools"} <= entries
    assert not {"trex_eval", "_editable_impl_trex_eval.pth", "pydantic", "openai", "httpx"} & entries


def test_every_hooked_library_comes_from_an_allowed_distribution() -> None:
    """Each hook's declared DISTRIBUTION is what lets its library into the sandbox's view."""
    allowed = site_entries.solver_closure()
    providers = importlib.metadata.packages_distributions()
    for hook in hooks.INSTALLERS:
        top = hook.split(".")[0]
        installed = providers.get(top, [])
        if installed:
            assert any(site_entries.distribution_key(name) in allowed for name in installed), hook


def test_weaker_levels_say_the_answers_are_readable(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    report = probe_isolation(prefer="rlimits", hidden=(str(answers),))

    assert report.readable_hidden == (str(answers),)
    assert report.warnings and "not tamper-proof" in report.warnings[0]
    assert "whole host file system" in report.host_view and report.exposed == ()
