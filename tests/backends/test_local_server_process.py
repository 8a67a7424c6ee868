"""ServerProcess against real child processes: a tiny stdlib HTTP server whose behaviour each test
chooses (ready at once, never ready, dies at start, ignores SIGTERM, spawns a grandchild)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from trex_eval.backends.server_process import ServerLaunch, ServerProcess, free_port
from trex_eval.errors import BackendError

# argv: PORT MODE [PIDFILE]. Modes: ok, quiet (prints nothing), never-ready, crash, stubborn (ignores
# SIGTERM), spawn
# (starts a `sleep` grandchild in its process group and writes its pid to PIDFILE).
SERVER = r"""
import http.server, json, signal, subprocess, sys, time

port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "crash":
    print("fatal: cannot load model weights", file=sys.stderr, flush=True)
    sys.exit(3)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "spawn":
    child = subprocess.Popen(["sleep", "300"])
    with open(sys.argv[3], "w") as f:
        f.write(str(child.pid))

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ready = mode != "never-ready"
        body = json.dumps({"data": [{"id": "fake"}]} if ready else {"status": "loading"}).encode()
        self.send_response(200 if ready else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

if mode != "quiet":
    print(f"fake server on {port}", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


@pytest.fixture()
def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "fake_server.py"
    path.write_text(SERVER)
    return path


def launch(script: Path, mode: str, tmp_path: Path, **overrides: object) -> ServerLaunch:
    port = free_port()
    extra = [str(tmp_path / "grandchild.pid")] if mode == "spawn" else []
    settings: dict[str, object] = {
        "label": "fake server",
        "argv": (sys.executable, str(script), str(port), mode, *extra),
        "port": port,
        "startup_timeout_s": 20.0,
        "stop_grace_s": 5.0,
        "log_file": tmp_path / "server.log",
    }
    settings.update(overrides)
    return ServerLaunch(**settings)  # type: ignore[arg-type]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still has a pid until its parent reaps it; it runs nothing.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_start_waits_for_every_ready_path_then_stop_ends_the_process(
    server_script: Path, tmp_path: Path
) -> None:
    async def scenario() -> tuple[int, int | None, int | None]:
        server = ServerProcess(launch(server_script, "ok", tmp_path))
        await server.start()
        assert server.running
        async with httpx.AsyncClient() as client:
            models = (await client.get(f"{server.base_url}/v1/models")).json()
        assert models == {"data": [{"id": "fake"}]}
        pid = server.pid
        assert pid is not None
        returncode = await server.stop()
        return pid, returncode, await server.stop()

    pid, returncode, second = asyncio.run(scenario())
    assert returncode == -15  # ended by the SIGTERM, no SIGKILL needed
    assert second == -15  # stop() is idempotent
    assert not pid_alive(pid)
    assert "fake server on" in (tmp_path / "server.log").read_text()


def test_a_server_that_dies_during_startup_is_reported_with_its_log(
    server_script: Path, tmp_path: Path
) -> None:
    server = ServerProcess(launch(server_script, "crash", tmp_path))
    with pytest.raises(BackendError) as caught:
        asyncio.run(server.start())
    message = str(caught.value)
    assert "fake server exited with status 3 during start-up" in message
    assert "fatal: cannot load model weights" in message
    assert caught.value.where == str(tmp_path / "server.log")
    assert not server.running


def test_a_server_that_never_becomes_ready_times_out_and_is_killed(
    server_script: Path, tmp_path: Path
) -> None:
    settings = launch(server_script, "never-ready", tmp_path, startup_timeout_s=1.5)
    server = ServerProcess(settings)
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        asyncio.run(server.start())
    assert 1.5 <= time.monotonic() - started < 10
    assert "was not ready after 1.5 s (GET /health: HTTP 503)" in str(caught.value)
    assert server.pid is not None and not pid_alive(server.pid)
    assert not port_open(settings.port)


def test_stop_escalates_to_sigkill_after_the_grace_period(server_script: Path, tmp_path: Path) -> None:
    async def scenario() -> tuple[int | None, float]:
        server = ServerProcess(launch(server_script, "stubborn", tmp_path, stop_grace_s=0.5))
        await server.start()
        started = time.monotonic()
        returncode = await server.stop()
        return returncode, time.monotonic() - started

    returncode, elapsed = asyncio.run(scenario())
    assert returncode == -9
    assert 0.5 <= elapsed < 5


def test_stop_also_ends_processes_the_server_spawned(server_script: Path, tmp_path: Path) -> None:
    async def scenario() -> int:
        server = ServerProcess(launch(server_script, "spawn", tmp_path))
        await server.start()
        grandchild = int((tmp_path / "grandchild.pid").read_text())
        assert pid_alive(grandchild)
        await server.stop()
        return grandchild

    grandchild = asyncio.run(scenario())
    deadline = time.monotonic() + 5
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild)


def test_an_executable_that_does_not_exist_is_a_backend_error(tmp_path: Path) -> None:
    server = ServerProcess(
        ServerLaunch(
            label="ghost",
            argv=(str(tmp_path / "no-such-binary"),),
            port=free_port(),
            log_file=tmp_path / "ghost.log",
        )
    )
    with pytest.raises(BackendError, match=r"cannot start ghost: .*no-such-binary"):
        asyncio.run(server.start())


def test_a_default_log_file_is_created_in_the_temp_dir_and_kept(server_script: Path, tmp_path: Path) -> None:
    settings = launch(server_script, "crash", tmp_path, log_file=None)
    server = ServerProcess(settings)
    with pytest.raises(BackendError):
        asyncio.run(server.start())
    try:
        assert server.log_path.name.startswith("trex-fake-server-")
        assert "fatal: cannot load model weights" in server.log_path.read_text()
    finally:
        server.log_path.unlink()


def test_a_server_never_started_or_silent_leaves_no_log_in_the_temp_dir(
    server_script: Path, tmp_path: Path
) -> None:
    ghost = ServerProcess(
        ServerLaunch(label="ghost", argv=(str(tmp_path / "no-such-binary"),), port=free_port())
    )
    with pytest.raises(BackendError):
        asyncio.run(ghost.start())
    assert not ghost.log_path.exists()

    async def start_and_stop(server: ServerProcess) -> None:
        await server.start()
        await server.stop()

    silent = ServerProcess(launch(server_script, "quiet", tmp_path, log_file=None))
    asyncio.run(start_and_stop(silent))
    assert not silent.log_path.exists()


def test_free_port_can_be_bound_on_loopback() -> None:
    port = free_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        assert listener.getsockname()[1] == port
