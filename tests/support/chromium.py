"""Headless Debian Chromium driven over the DevTools protocol through a pipe (stdlib only).

``chromium --remote-debugging-pipe`` reads NUL-terminated JSON commands on file descriptor 3 and
writes replies and events on descriptor 4, so no websocket client and no TCP port are needed.
:class:`HeadlessChromium` starts the browser with a throw-away profile and HOME, opens one page,
and records every console message, uncaught exception, log entry and network request of it.

    with HeadlessChromium() as browser:
        browser.load(path.as_uri())
        count = browser.evaluate("document.querySelectorAll('svg.chart').length")
        png = browser.screenshot()
        assert not browser.errors()
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

EXECUTABLE = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's own sandbox refuses to start
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


def chromium_executable() -> str | None:
    """The Chromium binary to drive, or ``None`` when it is not installed."""
    if Path(EXECUTABLE).is_file():
        return EXECUTABLE
    return shutil.which("chromium")


def _high_pipe() -> tuple[int, int]:
    """A pipe whose ends are numbered 10 or above, so that wiring them to 3 and 4 in the child
    can never overwrite one end with the other."""
    low_read, low_write = os.pipe()
    ends = (
        fcntl.fcntl(low_read, fcntl.F_DUPFD_CLOEXEC, 10),
        fcntl.fcntl(low_write, fcntl.F_DUPFD_CLOEXEC, 10),
    )
    os.close(low_read)
    os.close(low_write)
    return ends


class BrowserError(RuntimeError):
    """The browser died, answered with an error, or did not answer in time."""


class HeadlessChromium:
    """One headless browser with one page whose viewport is ``window`` CSS pixels (see the module
    docstring). ``timeout`` is the seconds any single protocol answer may take."""

    def __init__(
        self, *, executable: str | None = None, window: tuple[int, int] = (1366, 900), timeout: float = 30.0
    ):
        found = executable or chromium_executable()
        if found is None:
            raise BrowserError("chromium is not installed (apt-get install chromium)")
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._home = Path(tempfile.mkdtemp(prefix="trex-chromium-"))
        self._buffer = b""
        self._next_id = 0
        commands_read, self._commands = _high_pipe()
        self._replies, replies_write = _high_pipe()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self._home),
            "XDG_CONFIG_HOME": str(self._home / "config"),
            "XDG_CACHE_HOME": str(self._home / "cache"),
            "XDG_RUNTIME_DIR": str(self._home / "runtime"),
        }

        def wire_pipes() -> None:  # runs in the child, before exec
            os.dup2(commands_read, 3)
            os.dup2(replies_write, 4)

        self._stderr = (self._home / "stderr.log").open("w")
        self._process = subprocess.Popen(
            [
                found,
                *FLAGS,
                f"--user-data-dir={self._home / 'profile'}",
                f"--window-size={window[0]},{window[1]}",
            ],
            pass_fds=(3, 4),
            preexec_fn=wire_pipes,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        os.close(commands_read)
        os.close(replies_write)
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self._call(f"{domain}.enable", session=True)
        # --window-size includes the (invisible) browser frame; pin the page's viewport itself.
        self._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": window[0], "height": window[1], "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    # ------------------------------------------------------------------ page

    def load(self, url: str) -> None:
        """Navigate and wait for the page's load event."""
        self.events.clear()
        self._call("Page.navigate", {"url": url}, session=True)
        self._wait_for(lambda message: message.get("method") == "Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression evaluated in the page.

        Raises:
            BrowserError: the expression threw.
        """
        result = self._call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, *, full_page: bool = False) -> bytes:
        """PNG bytes of the viewport, or of the whole page."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            width, height = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params |= {
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            }
        return base64.b64decode(self._call("Page.captureScreenshot", params, session=True)["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error-level log entries seen since :meth:`load`."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(
                    "console: "
                    + " ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"])
                )
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(
                    "exception: " + str(details.get("exception", {}).get("description", details.get("text")))
                )
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(f"log: {params['entry'].get('text')} ({params['entry'].get('url', '')})")
        return found

    def requested_urls(self) -> list[str]:
        """Every URL the page requested since :meth:`load` (the page itself included)."""
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event.get("method") == "Network.requestWillBeSent"
        ]

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        try:
            if self._process.poll() is None:
                self._call("Browser.close")
                self._process.wait(timeout=10)
        except (BrowserError, OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait(timeout=10)
        finally:
            for fd in (self._commands, self._replies):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._stderr.close()
            shutil.rmtree(self._home, ignore_errors=True)

    def __enter__(self) -> HeadlessChromium:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ protocol

    def _call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        wanted = self._next_id
        reply = self._wait_for(lambda answer: answer.get("id") == wanted)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def _wait_for(self, matches: Any) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message: dict[str, Any] = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if matches(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer from chromium within {self.timeout} s")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    log = (self._home / "stderr.log").read_text(errors="replace")[-2000:]
                    raise BrowserError(f"chromium exited (code {self._process.poll()}): {log}")
                self._buffer += chunk
