"""The verifier process: re-solves the views the harness sends it, one at a time, each within a
budget of this process's CPU seconds (``python -m trex_eval.verify.worker``; started and spoken
to by :mod:`.lanes`, never by anything a program controls).

Why a process of its own:

* **A budget load cannot move.** A re-solve is charged in CPU seconds of a process that does
  nothing else (:class:`~.base.CpuDeadline` for the build, ``RLIMIT_CPU`` for everything, the
  solver included): a machine saturated by other work slows the re-solve down but does not make
  it run out of budget, so the verdict is the same on a quiet machine and a loaded one.
* **Signals stay the harness's.** Solver libraries install handlers of their own while they
  optimise (gurobipy takes SIGINT: "Interrupt request received"); here they do so in a process
  that is not in the terminal's process group, so a user's Ctrl-C reaches only the harness.
* **Hostile models stay out of the harness.** A solver that crashes or runs away on a crafted
  model ends this process, not the run.

It also reads the model files programs write (LP, MPS) into models, under the same kind of
budget: the text is the program's, so its reading is the harness's work on the program's behalf,
bounded and kept out of the harness process.

Protocol (binary, over two pipes): the harness writes frames of a 4-byte big-endian length and a
pickle of ``("resolve", view, prefer_gurobi, budget_s, spent_s)`` (CPU seconds: the whole
budget, and what the harness's reading of the model used of it) or ``("parse", text, "lp" |
"mps", budget_s)`` (harness to harness: the view was built by the
harness's own code); this process answers with frames of JSON, first one hello
(``{"protocol": PROTOCOL, "gurobi": bool}``), then per request any number of
``{"solving": solver}`` notes and one
final ``{"status", "objective", "raw", "solver", "cpu_s"}`` verdict, ``{"model": <the model's JSON>}``,
or ``{"refused": "unsolvable" | "out_of_time" | "unreadable" | "too_large" | "failed" | "harness",
"message", "solver"}``. Nothing here reads a file or the network.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import resource
import signal
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

from ..errors import GradingError
from ..lp import ModelTooLarge, parse_lp, parse_mps
from . import highs
from .base import CpuDeadline, Deadline, OutOfTime, Resolve, Unsolvable
from .gurobi import gurobi_available, solve_gurobi
from .highs import HIGHS_QP_MAX_COLUMNS, solve_highs
from .scip import solve_scip
from .views import ModelView, convex_objective

_FRAME = struct.Struct(">I")
MEMORY_LIMIT_BYTES = 4 << 30
"""Address space of a verifier process (``RLIMIT_AS``): solvers and readers at the size caps fit
well inside it (SCIP ~300 MiB at the caps; an LP at the caps ~1 GiB while it is read)."""
PROTOCOL = 1
"""This module's pipe protocol; :data:`.lanes.PROTOCOL` must equal it (the two change together)."""


def _open_choice(view: ModelView, deadline: Deadline) -> Callable[[ModelView, Deadline], Resolve]:
    """The solver without a licence for ``view``: HiGHS for linear models, MILPs and convex
    continuous QPs of at most :data:`~.highs.HIGHS_QP_MAX_COLUMNS` columns, SCIP for the rest
    (MIQP, quadratic constraints, larger QPs, non-convex or not shown convex: see
    :func:`~.views.convex_objective`)."""
    if view.q_rows:
        return solve_scip
    if not len(view.hessian):
        return solve_highs
    if view.integral or view.n > HIGHS_QP_MAX_COLUMNS:
        return solve_scip
    return solve_highs if convex_objective(view, deadline) else solve_scip


def _highs_qp(view: ModelView, deadline: Deadline) -> bool:
    """Whether ``view`` is a convex continuous QP that HiGHS takes (:func:`_open_choice`), which
    is re-solved with HiGHS even for a gurobipy claim: a few ms, where gurobipy's re-solve of a
    QP takes ~0.2-0.35 CPU s. Not convex (BENCH4OPT_364/365's objective is indefinite): gurobipy."""
    return bool(len(view.hessian)) and _open_choice(view, deadline) is solve_highs


def resolve_view(
    view: ModelView,
    *,
    prefer_gurobi: bool,
    deadline: Deadline,
    solving: Callable[[str], None] = lambda _: None,
) -> Resolve:
    """The verdict of the first solver that takes ``view`` (gurobipy first where preferred and
    licensed, but for a convex continuous QP HiGHS takes; then :func:`_open_choice`), all of
    them within ``deadline``; ``solving(name)`` is told each solver before it starts.

    Raises:
        Unsolvable: no solver takes the model (the last refusal's reason).
        OutOfTime: the deadline passed before a solver could run (no further solver is tried).
    """
    if prefer_gurobi and gurobi_available() and not _highs_qp(view, deadline):
        solving("gurobipy")
        try:
            return solve_gurobi(view, deadline)
        except OutOfTime:
            raise
        except Unsolvable:  # e.g. too large for its licence: the other solvers' word stands
            pass
    choice = _open_choice(view, deadline)
    solving("scip" if choice is solve_scip else "highs")
    return choice(view, deadline)


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _limit_cpu(budget_s: float) -> None:
    """End this process with SIGXCPU once it has used ``budget_s`` more CPU seconds (rounded up
    to the kernel's whole seconds): the stop that also holds inside a solver's own loop."""
    soft = math.ceil(_cpu_used() + budget_s)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


Send = Callable[[dict[str, Any]], None]


def _resolve(request: tuple[Any, ...], send: Send) -> dict[str, Any]:
    _, view, prefer_gurobi, budget_s, spent_s = request
    deadline = CpuDeadline(budget_s, spent_s=spent_s)
    started = time.process_time()
    try:
        result = resolve_view(
            view, prefer_gurobi=prefer_gurobi, deadline=deadline, solving=lambda name: send({"solving": name})
        )
    except OutOfTime as error:
        return {"refused": "out_of_time", "message": str(error), "solver": error.solver}
    except Unsolvable as error:
        return {"refused": "unsolvable", "message": str(error), "solver": None}
    return {
        "status": result.status.value,
        "objective": result.objective,
        "raw": result.raw_status,
        "solver": result.solver,
        "cpu_s": time.process_time() - started,
    }


def _parse(request: tuple[Any, ...], send: Send) -> dict[str, Any]:
    """A model file's text read into a model: the reply's ``model`` frame is its JSON."""
    _, text, kind = request[:3]
    try:
        model = parse_mps(text) if kind == "mps" else parse_lp(text)
    except ModelTooLarge as error:
        return {"refused": "too_large", "message": str(error), "solver": None}
    except GradingError as error:
        return {"refused": "unreadable", "message": str(error), "solver": None}
    return {"model": model.model_dump_json()}


_TASKS: dict[str, tuple[Callable[[tuple[Any, ...], Send], dict[str, Any]], int]] = {
    "resolve": (_resolve, 3),
    "parse": (_parse, 3),
}
"""What a request's first field asks for, and where its CPU budget is in the request."""


def _answer(request: tuple[Any, ...], send: Send) -> dict[str, Any]:
    task, budget_at = _TASKS[request[0]]
    budget_s = float(request[budget_at])
    spent_s = float(request[budget_at + 1]) if len(request) > budget_at + 1 else 0.0
    _limit_cpu(budget_s - spent_s)
    try:
        return task(request, send)
    except ImportError as error:  # the installation's failure, never the sample's
        return {"refused": "harness", "message": f"{type(error).__name__}: {error}", "solver": None}
    except Exception as error:  # a solver's or reader's own failure on this input: a verdict
        return {"refused": "failed", "message": f"{type(error).__name__}: {error}", "solver": None}
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def serve(requests: int, replies: int) -> None:
    """Answer requests from file descriptor ``requests`` on ``replies`` until end of file."""

    def send(payload: dict[str, Any]) -> None:
        body = json.dumps(payload, allow_nan=True).encode()
        data = memoryview(_FRAME.pack(len(body)) + body)
        while data:
            data = data[os.write(replies, data) :]

    send({"protocol": PROTOCOL, "gurobi": gurobi_available()})
    while True:
        head = _read_exactly(requests, _FRAME.size)
        if head is None:
            return
        body = _read_exactly(requests, _FRAME.unpack(head)[0])
        if body is None:
            return
        send(_answer(pickle.loads(body), send))


def main() -> None:
    """Entry point: replies go out on the original stdout, which is then pointed at /dev/null (HiGHS
    prints its banner to file descriptor 1 from C++); terminal signals are ignored (the harness
    ends this process by closing its stdin, or kills it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # A re-solve or reading at the size caps takes a few hundred MiB; past this the process fails
    # its request (MemoryError, or the kernel ends it) and is replaced, not the machine swapped.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    highs.THREADS = 1  # one thread: a budget of CPU seconds then means the same work on any machine
    replies = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the whole life of the process
    serve(0, replies)


if __name__ == "__main__":
    main()
