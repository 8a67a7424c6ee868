"""An inspect log of a trex-eval task opens in ``inspect view``, in a real browser.

The real ``inspect eval trex_eval/nl4opt`` grades three recorded completions (the reference
program, a program with a wrong optimum, a program that raises) served by an OpenAI-compatible
server on loopback; the real ``inspect view`` then serves its log directory on 127.0.0.1, and
headless Chromium opens each sample's *Scoring* tab. The page must show the verdict, the reason
and the rule (``name@version``) that the task stored in the log, read back with inspect's own
reader, and its screenshot must be a drawn page (many colours, not a blank screen). The PNGs
stay under the test's ``tmp_path`` (``TREX_REPORT_SCREENSHOTS=DIR`` copies them there too).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromium import HeadlessChromium, chromium_executable
from ci_required import required
from inspect_run import INSPECT, inspect_eval
from numpy.typing import NDArray

from trex_eval.backends.reference import answer_program, reference_completion_text
from trex_eval.integrations.inspect.grading import TaskSettings, prepare
from trex_eval.records import ObjectiveReference, Problem

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # inspect eval, inspect view, Chromium: about a minute

BENCHMARK = "nl4opt"
LIMIT = 3
WINDOW = (1366, 900)
EXPECTED_VERDICTS = ("correct", "wrong", "runtime_error")
"""What the three completions are graded: the log must hold these before the page is checked."""


def _completion(problem: Problem, position: int) -> str:
    """0: the reference program; 1: the same model with its optimum moved by 7.5; 2: a raise."""
    reference = problem.reference
    assert isinstance(reference, ObjectiveReference) and reference.value is not None
    if position == 0:
        return reference_completion_text(problem)
    if position == 1:
        wrong = reference.model_copy(update={"value": reference.value + 7.5})
        return f"My model.\n\n```python\n{answer_program(wrong, library='pulp').rstrip()}\n```\n"
    return "```python\nimport pulp\nraise RuntimeError('data missing')\n```\n"


@pytest.fixture(scope="module", autouse=True)
def _prerequisites() -> None:
    required(
        importlib.util.find_spec("inspect_ai") is not None,
        "inspect_ai is not installed (the [integrations] extra)",
        in_ci=".ci/run installs the [integrations] extra",
    )
    required(
        chromium_executable() is not None,
        "chromium is not installed (apt-get install chromium)",
        in_ci=".ci/run installs chromium",
    )


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``.eval`` log of one real ``inspect eval`` of the first LIMIT nl4opt problems."""
    root = tmp_path_factory.mktemp("inspect-view")
    (item,) = prepare(TaskSettings(benchmarks=(BENCHMARK,), limit=LIMIT)).benchmarks
    answers = {
        item.renderer.render(problem).messages[-1].content: _completion(problem, position)
        for position, problem in enumerate(item.problems)
    }

    logs = root / "logs"
    done, _ = inspect_eval(answers, [f"trex_eval/{BENCHMARK}", "-T", f"limit={LIMIT}"], logs=logs)
    assert done.returncode == 0, f"inspect eval exited {done.returncode}\n{done.stderr[-4000:]}"
    (log,) = logs.glob("*.eval")
    return log


@dataclass(frozen=True)
class Viewer:
    """A running ``inspect view`` and the base URL it serves on."""

    url: str
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_serving(viewer: Viewer, log_file: Path, output: Path, *, timeout: float = 60.0) -> None:
    """Poll the viewer's own listing API until it lists ``log_file``; fail with its output when it
    exits or does not list the log within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if viewer.process.poll() is not None:
            pytest.fail(f"inspect view exited {viewer.process.returncode}:\n{output.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{viewer.url}/api/log-files", timeout=5) as answer:
                listed = json.load(answer)
            if any(entry["name"].endswith(log_file.name) for entry in listed["files"]):
                return
            last = f"listed {listed}"
        except (urllib.error.URLError, OSError, ValueError) as error:
            last = repr(error)
        time.sleep(0.25)
    pytest.fail(
        f"inspect view did not list {log_file.name} in {timeout} s ({last}):\n{output.read_text()[-3000:]}"
    )


@pytest.fixture(scope="module")
def viewer(log_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    """``inspect view`` on 127.0.0.1 over the log's directory; stopped (TERM, then KILL) after."""
    home = tmp_path_factory.mktemp("inspect-view-home")
    port = _free_port()
    output = home / "view.log"
    # inspect view keeps a pid file per port in its data directory and terminates the process a
    # stale one names: a private XDG_DATA_HOME keeps it from touching anything outside the test.
    env = {**os.environ, "XDG_DATA_HOME": str(home / "data"), "INSPECT_LOG_DIR": str(log_file.parent)}
    command = [str(INSPECT), "view", "start", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--log-dir", str(log_file.parent), "--display", "plain"]
    with output.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    running = Viewer(url=f"http://127.0.0.1:{port}", process=process)
    try:
        _wait_until_serving(running, log_file, output)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[HeadlessChromium]:
    with HeadlessChromium(window=WINDOW) as instance:
        yield instance


@dataclass(frozen=True)
class Stored:
    """One sample of the log as inspect's own reader reads it: its id, epoch and its one score's
    explanation and metadata (the trex-eval grade)."""

    id: str
    epoch: int
    score: dict[str, Any]


@pytest.fixture(scope="module")
def stored(log_file: Path) -> list[Stored]:
    """The log's samples in problem order."""
    from inspect_ai.log import read_eval_log

    samples = []
    for sample in read_eval_log(str(log_file)).samples or []:
        (score,) = (sample.scores or {}).values()
        assert score.metadata is not None
        samples.append(
            Stored(str(sample.id), sample.epoch, {"explanation": score.explanation, **score.metadata})
        )
    return sorted(samples, key=lambda sample: int(sample.id))


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_log_holds_the_graded_samples(stored: list[Stored]) -> None:
    assert tuple(sample.score["verdict"] for sample in stored) == EXPECTED_VERDICTS


@pytest.mark.parametrize("position", range(LIMIT))
def test_scoring_tab_shows_the_stored_grade(
    position: int,
    log_file: Path,
    stored: list[Stored],
    viewer: Viewer,
    browser: HeadlessChromium,
    tmp_path: Path,
) -> None:
    sample = stored[position]
    score = sample.score
    # The score's metadata table shows "key: value" lines; the explanation is "verdict: reason".
    expected = [f"{key}: {_flat(str(score[key]))}" for key in ("verdict", "rule", "reason", "problem_id")]
    expected.append(_flat(score["explanation"]))
    assert "@" in score["rule"] and score["reason"]
    browser.load("about:blank")  # a new document: a change of the hash alone fires no load event
    browser.load(f"{viewer.url}/#/logs/{log_file.name}/samples/sample/{sample.id}/{sample.epoch}/scoring")
    shown = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = _flat(browser.evaluate("document.body.innerText") or "")
        if all(text in shown for text in expected):
            break
        time.sleep(0.25)
    missing = [text for text in expected if text not in shown]
    assert missing == [], f"the Scoring tab does not show {missing}; it shows: {shown[:3000]}"
    assert f"Sample {sample.id} (Epoch {sample.epoch})" in shown
    assert [error for error in browser.errors() if error.startswith("exception:")] == []
    png = browser.screenshot()
    path = tmp_path / f"inspect-view-sample-{sample.id}.png"
    path.write_bytes(png)
    width, height, colours, inked = _png_census(path.read_bytes())
    assert (width, height) == WINDOW
    # A drawn page: anti-aliased text and the viewer's chrome give hundreds of colours, and text
    # covers a real part of the viewport; a blank page has one.
    assert colours >= 50 and inked >= 0.02, (path, colours, inked)
    keep = os.environ.get("TREX_REPORT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def _png_census(png: bytes) -> tuple[int, int, int, float]:
    """Width, height, number of distinct colours and the share of pixels that are not the most
    common colour, of an 8-bit RGB or RGBA non-interlaced PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, header, data = 8, b"", b""
    while at < len(png):
        (length,), kind = struct.unpack(">I", png[at : at + 4]), png[at + 4 : at + 8]
        header = png[at + 8 : at + 8 + length] if kind == b"IHDR" else header
        data += png[at + 8 : at + 8 + length] if kind == b"IDAT" else b""
        at += 12 + length
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, (depth, colour_type, interlace)
    channels = 4 if colour_type == 6 else 3
    rows = np.frombuffer(zlib.decompress(data), dtype=np.uint8).reshape(height, 1 + width * channels)
    pixels = np.zeros((height, width * channels), dtype=np.uint8)
    previous = np.zeros(width * channels, dtype=np.uint8)
    for y in range(height):
        previous = pixels[y] = _unfilter(int(rows[y, 0]), rows[y, 1:], previous, channels)
    packed = pixels.reshape(height * width, channels).astype(np.uint32) @ (
        256 ** np.arange(channels, dtype=np.uint32)
    )
    _, counts = np.unique(packed, return_counts=True)
    return width, height, len(counts), 1 - int(counts.max()) / (width * height)


def _unfilter(kind: int, line: NDArray[np.uint8], above: NDArray[np.uint8], step: int) -> NDArray[np.uint8]:
    """One scanline with its PNG filter (0 none, 1 sub, 2 up, 3 average, 4 Paeth) undone; uint8
    arithmetic wraps modulo 256 as the filters do."""
    if kind == 0:
        return line.copy()
    if kind == 1:
        return np.cumsum(line.reshape(-1, step), axis=0, dtype=np.uint8).reshape(-1)
    if kind == 2:
        return line + above
    out, up = bytearray(line.tobytes()), above.tobytes()
    for i in range(len(out)):  # average and Paeth read the byte just decoded: one by one
        left, corner = (out[i - step], up[i - step]) if i >= step else (0, 0)
        if kind == 3:
            out[i] = (out[i] + (left + up[i]) // 2) & 0xFF
            continue
        guess = left + up[i] - corner
        near = min(
            (abs(guess - left), 0, left), (abs(guess - up[i]), 1, up[i]), (abs(guess - corner), 2, corner)
        )
        out[i] = (out[i] + near[2]) & 0xFF
    return np.frombuffer(bytes(out), dtype=np.uint8)
