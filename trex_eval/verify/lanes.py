"""The harness's side of its verifier processes (:mod:`.worker`): a few long-lived processes, each
re-solving one view at a time within a budget of its own CPU seconds, started on first use and
replaced when one is ended for running over a budget.

Thread-safe: each call takes an idle process (starting one while fewer than ``size`` exist,
else waiting for one), so at most ``size`` re-solves run at once whatever the number of calling
threads.

**Budgets.** A re-solve's budget is in CPU seconds of its verifier process, which does nothing
else: load from other work slows it down but does not use it up. CPU seconds still rise somewhat
when every core is contended (caches, frequency; about 1.5x measured here with 8 busy processes
a core), so the budgets the harness gives (:mod:`.choice`) are at least
:data:`CPU_BUDGET_MARGIN` times what the re-solves they are meant for take on a quiet machine.
Wall time bounds only what no budget can: a process that gets no CPU at all for
:func:`wall_backstop_s` is given up on ("skipped", saying so).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from ..errors import GradingError, SandboxError
from ..fairness import FairGate
from ..records import LinearModel, SolveStatus
from .base import OutOfTime, Resolve, Unsolvable
from .views import ModelView

CPU_BUDGET_MARGIN = 2.0
"""How many times a quiet machine's CPU time of a re-solve its budget must be, so that a loaded
machine (which stretches CPU time by up to ~1.5x) still finishes it within budget."""
WALL_BACKSTOP_MIN_S = 600.0
WALL_BACKSTOP_FACTOR = 60.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The folder holding the ``trex_eval`` package in use (a verifier process starts there)."""
_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "GRB_LICENSE_FILE", "GUROBI_HOME")
_FRAME = 4


def wall_backstop_s(budget_s: float) -> float:
    """Wall seconds after which a re-solve of ``budget_s`` CPU seconds is given up on: only a
    process starved of CPU for that long reaches it (a budget of 10 CPU s: 10 minutes)."""
    return max(WALL_BACKSTOP_MIN_S, WALL_BACKSTOP_FACTOR * budget_s)


def _environment() -> dict[str, str]:
    """What a verifier process inherits: where Python and the licences are, one thread per
    numerical library (so that its CPU seconds are one solve's), and nothing else (no API keys)."""
    env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return env


PROTOCOL = 1
"""The version of the pipe protocol :mod:`.worker` speaks; a verifier process started from a
trex-eval changed on disk under a running harness says another and is refused."""


class VerifierError(SandboxError):
    """The harness could not start a verifier process (a failure of the installation, never of
    the sample: it is raised, not turned into a verdict)."""


class ModelFileRefused(GradingError):
    """A program's model file the harness does not read to the end: over the size caps, or over
    its budget of CPU seconds. Not a verdict on the model (it was neither read nor compared)."""


class _Died(Exception):
    def __init__(self, how: str, *, over_budget: bool) -> None:
        super().__init__(how)
        self.over_budget = over_budget


@dataclass
class _Process:
    """One verifier process, its two pipe ends and the file its stderr goes to (read only to say
    why it ended)."""

    popen: subprocess.Popen[bytes]
    requests: int
    replies: int
    stderr: IO[bytes]
    gurobi: bool = False

    @classmethod
    def start(cls) -> _Process:
        """A started verifier process that said hello in this harness's protocol.

        Raises:
            VerifierError: it could not start, or it speaks another protocol version (the
                installed trex-eval changed under a running harness).
        """
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the process (close)
        popen = subprocess.Popen(
            [sys.executable, "-m", "trex_eval.verify.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=_environment(),
            # `-m` puts the working directory first on sys.path: the folder holding this very
            # package, so the verifier runs the harness's code and nothing a folder of the
            # user's (or a program's, at the rlimits level) could plant.
            cwd=_PACKAGE_ROOT,
            start_new_session=True,  # not in the terminal's process group: Ctrl-C is the harness's
            close_fds=True,
        )
        assert popen.stdin is not None and popen.stdout is not None
        process = cls(popen, popen.stdin.fileno(), popen.stdout.fileno(), stderr)
        try:
            hello = process._read(time.monotonic() + WALL_BACKSTOP_MIN_S)
        except _Died as died:
            process.close()
            raise VerifierError(f"the verifier process did not start: {died}") from None
        except BaseException:
            process.close()
            raise
        if hello.get("protocol") != PROTOCOL:
            process.close()
            raise VerifierError(
                f"the verifier process speaks protocol {hello.get('protocol')!r}, this harness "
                f"{PROTOCOL!r}: trex-eval was changed on disk while it ran; start the run again "
                "(--resume keeps what was graded)"
            )
        process.gurobi = bool(hello.get("gurobi"))
        return process

    def ask(self, request: tuple[Any, ...], *, budget_s: float, spent_s: float = 0.0) -> dict[str, Any]:
        """The final reply to ``request`` (see :mod:`.worker`), run within what is left of
        ``budget_s`` CPU seconds after ``spent_s``.

        Raises:
            OutOfTime: the budget ran out inside a solver or reader (the process was ended and
                must be replaced), or the wall backstop passed.
            Unsolvable: the process failed on it.
        """
        body = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        end = time.monotonic() + wall_backstop_s(budget_s - spent_s)
        doing: str | None = None
        try:
            self._write(len(body).to_bytes(_FRAME, "big") + body)
            while True:
                reply = self._read(end)
                if "solving" not in reply:
                    self.stderr.seek(0)
                    self.stderr.truncate()  # only the last request's words are ever wanted
                    return reply
                doing = str(reply["solving"])
        except _Died as died:
            if died.over_budget:
                what = "re-solve" if request[0] == "resolve" else "reading of the model file"
                raise OutOfTime(
                    f"the {what} ran past its budget of {budget_s:.3g} CPU s ({died})", doing
                ) from None
            raise Unsolvable(f"{request[0]} failed: the verifier process {died}") from None

    def alive(self) -> bool:
        return self.popen.poll() is None

    def close(self) -> None:
        """End the process (closing its stdin ends it between requests; a kill ends a solve)."""
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        for stream in (self.popen.stdin, self.popen.stdout, self.stderr):
            if stream is not None:
                stream.close()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.requests, view) :]
        except OSError as error:
            raise self._death(f"its pipe broke: {error}") from None

    def _read(self, end: float) -> dict[str, Any]:
        head = self._read_exactly(_FRAME, end)
        parsed = json.loads(self._read_exactly(int.from_bytes(head, "big"), end))
        if not isinstance(parsed, dict):
            raise self._death("it answered something other than a JSON object")
        return parsed

    def _read_exactly(self, size: int, end: float) -> bytes:
        chunks: list[bytes] = []
        while size:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.replies], [], [], left)[0]:
                self.popen.kill()
                self.popen.wait()
                raise _Died(
                    "no answer within the wall-clock backstop: the machine gave it no CPU", over_budget=True
                )
            chunk = os.read(self.replies, min(size, 1 << 20))
            if not chunk:
                raise self._death("it ended")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _death(self, what: str) -> _Died:
        self.popen.kill()
        code = self.popen.wait()
        if code == -signal.SIGXCPU:
            return _Died("its CPU budget ran out", over_budget=True)
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        self.stderr.seek(0)
        said = self.stderr.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
        last = f"; it said: {said[-1][:300]}" if said else ""
        return _Died(f"{what} ({how}{last})", over_budget=False)


def _raise_refusal(reply: dict[str, Any], what: str) -> None:
    """Raise what a refused reply (see :mod:`.worker`) means; return for one that is not refused.

    Raises:
        OutOfTime: ``out_of_time``. GradingError: ``unreadable`` (the reader's word on the file).
        ModelFileRefused: ``too_large``. VerifierError: ``harness`` (the installation's failure).
        Unsolvable: ``unsolvable`` (its message), anything else (``what`` failed).
    """
    refused, message = reply.get("refused"), str(reply.get("message"))
    if refused is None:
        return
    if refused == "out_of_time":
        raise OutOfTime(message, reply.get("solver"))
    if refused == "harness":
        raise VerifierError(f"the verifier process cannot work: {message}")
    if refused == "unreadable":
        raise GradingError(message)
    if refused == "too_large":
        raise ModelFileRefused(message)
    if refused == "unsolvable":
        raise Unsolvable(message)
    raise Unsolvable(f"{what} failed ({message})")


def _verdict(reply: dict[str, Any]) -> Resolve:
    _raise_refusal(reply, "re-solve")
    if "status" not in reply:
        raise Unsolvable(f"re-solve failed (no verdict in {reply})")
    objective = reply.get("objective")
    return Resolve(
        SolveStatus(reply["status"]),
        None if objective is None else float(objective),
        str(reply.get("raw", "")),
        str(reply.get("solver", "")),
        float(reply.get("cpu_s", 0.0)),
    )


class VerifierLanes:
    """At most ``size`` verifier processes (default: one per core, plus the reserve), shared by
    every thread of the harness and lent fairly among tenants (:class:`~trex_eval.fairness.FairGate`:
    a reward server's requests; one tenant in a run). ``reserve`` processes are kept for tenants
    that hold none, so a request's first re-solve never waits for another request's long ones:
    budgets are CPU seconds, so running one more process than there are cores changes no verdict,
    it only shares the cores. Nothing starts before the first :meth:`resolve`,
    :meth:`read_model`, :meth:`gurobi_available` or :meth:`warm`."""

    def __init__(self, *, size: int | None = None, reserve: int = 1) -> None:
        cores = os.cpu_count() or 2
        self.size = max(1, size if size is not None else cores + reserve)
        self._gate = FairGate(self.size, name="verifier process", reserve=min(reserve, self.size - 1))
        self._lock = threading.Lock()
        self._idle: list[_Process] = []
        self._closed = False
        self._gurobi: bool | None = None
        self.replaced = 0
        """Processes ended for running over a budget (or failing) and replaced since start."""
        self.started = 0
        """Processes started since creation (a run whose claims certificates settle starts none)."""

    def resolve(
        self, view: ModelView, *, prefer_gurobi: bool, budget_s: float, spent_s: float = 0.0
    ) -> Resolve:
        """The verdict of the first solver that takes ``view`` (gurobipy first where preferred and
        licensed), within ``budget_s`` CPU seconds less ``spent_s`` (what the caller's reading of
        the model used of them) of a verifier process.

        Raises:
            OutOfTime: the budget ran out (the process is replaced).
            Unsolvable: no solver takes the model, or the re-solve failed.
            DeadlinePassed: the tenant's deadline passed while it waited for a process.
            VerifierError: no verifier process could be started.
        """
        return _verdict(self._ask(("resolve", view, prefer_gurobi, budget_s, spent_s), budget_s, spent_s))

    def read_model(self, text: str, *, kind: Literal["lp", "mps"], budget_s: float) -> LinearModel:
        """The model a program's LP or MPS file holds, read by the harness's own reader
        (:mod:`trex_eval.lp`) in a verifier process within ``budget_s`` CPU seconds.

        Raises:
            GradingError: the text is not a readable model (the reader's message);
                ModelFileRefused (one) where it is over the size caps.
            OutOfTime: the budget ran out.
            Unsolvable: the reading failed otherwise.
            DeadlinePassed, VerifierError: as :meth:`resolve`.
        """
        reply = self._ask(("parse", text, kind, budget_s), budget_s, 0.0)
        _raise_refusal(reply, "reading the model")
        if "model" not in reply:
            raise Unsolvable(f"reading the model failed (no model in {reply})")
        return LinearModel.model_validate_json(reply["model"])

    def gurobi_available(self) -> bool:
        """Whether the verifier processes have a licensed gurobipy (asked of the first one)."""
        if self._gurobi is None:
            with self._gate.hold():
                self._give_back(self._take())
        return bool(self._gurobi)

    def warm(self) -> None:
        """Start one process now (solvers imported, gurobipy's licence checked), so that the first
        re-solve does not wait for it. Never raises: a failure shows at the first re-solve."""
        with contextlib.suppress(Unsolvable, VerifierError):
            self.gurobi_available()

    def close(self) -> None:
        """End every idle process; a busy one is ended when it is given back."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for process in idle:
            process.close()

    def _ask(self, request: tuple[Any, ...], budget_s: float, spent_s: float) -> dict[str, Any]:
        with self._gate.hold():
            process = self._take()
            answered = False
            try:
                reply = process.ask(request, budget_s=budget_s, spent_s=spent_s)
                answered = True
                return reply
            finally:
                # A process left with a reply unread (an interrupt, a malformed frame) would hand
                # it to the next request as that one's answer: it is ended instead.
                if not answered:
                    process.close()
                self._give_back(process)

    def _take(self) -> _Process:
        """An idle process, or a new one (the caller holds a slot of the gate, so at most
        ``size`` exist)."""
        with self._lock:
            if self._closed:
                raise VerifierError("the verifier lanes are closed (the harness is shutting down)")
            if self._idle:
                return self._idle.pop()
        process = _Process.start()
        with self._lock:
            self.started += 1
        self._gurobi = process.gurobi
        return process

    def _give_back(self, process: _Process) -> None:
        with self._lock:
            keep = process.alive() and not self._closed
            if keep:
                self._idle.append(process)
            else:
                self.replaced += int(not self._closed)
        if not keep:
            process.close()


_LANES = VerifierLanes()


def verifier_lanes() -> VerifierLanes:
    """The harness's verifier lanes (one set per process, ended at exit)."""
    return _LANES


def _close_at_exit() -> None:
    _LANES.close()


atexit.register(_close_at_exit)
