"""Run gurobipy programs, each in a fresh fork of one warm interpreter (test helper).

Usage: ``python program_driver.py JOBS.json``. ``JOBS.json`` is a list of
``{"workdir": str, "timeout_s": int}``; each workdir holds ``program.py`` (and its data files).
For each job the driver forks a child that changes into the workdir, sends stdout/stderr to
``stdout.txt``/``stderr.txt``, executes the program as ``__main__`` and writes ``result.json``:
which gurobipy it imported, the exception that ended it (if any) and, for the module-level
names ``model``/``m``, the status and ``ObjVal`` (``null`` while ``hasattr(obj, "ObjVal")`` is
false). ``gurobipy``, ``numpy`` and ``highspy`` are imported once, before the forks, so a job costs
milliseconds; whichever ``gurobipy`` ``sys.path`` resolves is the one every program sees, unless
``TREX_TEST_GUROBIPY_HIGHS`` names the gurobipy_highs folder: that is then loaded as ``gurobipy``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from typing import Any

if os.environ.get("TREX_TEST_GUROBIPY_HIGHS"):
    import importlib.util

    _folder = os.environ["TREX_TEST_GUROBIPY_HIGHS"]
    _spec = importlib.util.spec_from_file_location(
        "gurobipy", os.path.join(_folder, "__init__.py"), submodule_search_locations=[_folder]
    )
    assert _spec is not None and _spec.loader is not None
    sys.modules["gurobipy"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["gurobipy"])

import gurobipy
import highspy  # noqa: F401 - preloaded for the children
import numpy  # noqa: F401 - preloaded for the children


def _describe_model(namespace: dict[str, Any]) -> dict[str, Any]:
    for name in ("model", "m"):
        obj = namespace.get(name)
        if obj is None or not hasattr(obj, "optimize"):
            continue
        info: dict[str, Any] = {"name": name, "status": None, "objval": None}
        try:
            info["status"] = int(obj.Status)
        except Exception as error:  # the model object may be disposed or odd
            info["status_error"] = repr(error)
        try:
            if hasattr(obj, "ObjVal"):
                info["objval"] = float(obj.ObjVal)
        except Exception as error:
            info["objval_error"] = repr(error)
        return info
    return {}


def _run_child(workdir: str, timeout_s: int) -> None:
    os.chdir(workdir)
    out = os.open("stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    signal.alarm(timeout_s)
    started = time.perf_counter()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    result: dict[str, Any] = {
        "gurobipy_file": gurobipy.__file__,
        "highs": hasattr(gurobipy, "GUROBIPY_HIGHS"),
        "error_type": None,
        "error_module": None,
        "error": None,
        "needs_gurobi": False,
    }
    try:
        with open("program.py", encoding="utf-8") as handle:
            code = compile(handle.read(), "program.py", "exec")
        exec(code, namespace)
    except BaseException as error:
        result["error_type"] = type(error).__name__
        result["error_module"] = type(error).__module__
        result["error"] = str(error)
        result["needs_gurobi"] = bool(getattr(error, "needs_gurobi", False))
        traceback.print_exc()
    result["model"] = _describe_model(namespace)
    result["needs_gurobi_events"] = list(getattr(gurobipy, "NEEDS_GUROBI_EVENTS", []))
    result["wall_s"] = time.perf_counter() - started
    sys.stdout.flush()
    sys.stderr.flush()
    with open("result.json", "w", encoding="utf-8") as handle:
        json.dump(result, handle)


def main(jobs_path: str) -> None:
    with open(jobs_path, encoding="utf-8") as handle:
        jobs = json.load(handle)
    for job in jobs:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                _run_child(job["workdir"], int(job["timeout_s"]))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1])
