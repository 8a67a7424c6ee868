"""Run benchmark programs under real gurobipy or under the gurobipy_highs layer (test helper).

:func:`run_programs` is the one place that executes programs for the gurobipy_highs tests; it stands in
for the sandbox pool until that exists. Each program runs in its own working directory (with its
instance data), in a fresh fork of a warm interpreter (``program_driver.py``), two interpreters
in parallel. ``flavour="highs"`` has the driver load the ``gurobipy_highs`` folder under the name
``gurobipy`` first (as the sandbox does), so ``import gurobipy`` gives the layer and real gurobipy
is shadowed; ``flavour="real"`` leaves the installed gurobipy. Every result records which file
``gurobipy`` came from.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[2]
HIGHS_PACKAGE = REPO / "gurobipy_highs"
DRIVER = Path(__file__).with_name("program_driver.py")
HIGHS_ENV = "TREX_TEST_GUROBIPY_HIGHS"
"""Environment variable naming the folder the driver loads as ``gurobipy``."""

AS_GUROBIPY = f"""\
import importlib.util, sys
_spec = importlib.util.spec_from_file_location(
    "gurobipy", {str(HIGHS_PACKAGE / "__init__.py")!r}, submodule_search_locations=[{str(HIGHS_PACKAGE)!r}])
sys.modules["gurobipy"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sys.modules["gurobipy"])
"""
"""Code that makes ``import gurobipy`` give the gurobipy_highs layer, as the sandbox does."""

Flavour = Literal["highs", "real"]

#: The objective rule of the issue: ``|pred - ref| <= 1e-6 + 1e-4 * |ref|``.
ATOL = 1e-6
RTOL = 1e-4


def objectives_match(predicted: float, reference: float) -> bool:
    """The project's default objective rule (status optimal is checked by the caller)."""
    return abs(predicted - reference) <= ATOL + RTOL * abs(reference)


@dataclass(frozen=True)
class ProgramJob:
    """One program: its source and the files to place beside it (name -> text)."""

    key: str
    code: str
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProgramRun:
    """What one program did. ``status``/``objval`` come from the module-level ``model`` (or
    ``m``); ``objval`` is ``None`` unless ``hasattr(model, "ObjVal")``. ``written`` holds the
    ``.lp``/``.mps`` files left in the working directory."""

    key: str
    highs: bool
    gurobipy_file: str
    error_type: str | None
    error: str | None
    needs_gurobi: bool
    status: int | None
    objval: float | None
    written: dict[str, str]
    stdout: str
    stderr: str
    needs_gurobi_events: tuple[str, ...] = ()

    @property
    def not_implemented(self) -> bool:
        return self.error_type == "CompatNotImplementedError"


def _read_run(job: ProgramJob, workdir: Path) -> ProgramRun:
    result_file = workdir / "result.json"
    stdout = (workdir / "stdout.txt").read_text(errors="replace") if (workdir / "stdout.txt").exists() else ""
    stderr = (workdir / "stderr.txt").read_text(errors="replace") if (workdir / "stderr.txt").exists() else ""
    if not result_file.exists():
        return ProgramRun(
            job.key, False, "", "NoResult", stderr[-2000:], False, None, None, {}, stdout, stderr
        )
    data: dict[str, Any] = json.loads(result_file.read_text())
    model = data.get("model") or {}
    written = {p.name: p.read_text() for p in workdir.iterdir() if p.suffix in (".lp", ".mps")}
    return ProgramRun(
        key=job.key,
        highs=bool(data["highs"]),
        gurobipy_file=str(data["gurobipy_file"]),
        error_type=data["error_type"],
        error=data["error"],
        needs_gurobi=bool(data["needs_gurobi"]),
        status=model.get("status"),
        objval=model.get("objval"),
        written=written,
        stdout=stdout,
        stderr=stderr,
        needs_gurobi_events=tuple(data.get("needs_gurobi_events", ())),
    )


def run_programs(
    jobs: Sequence[ProgramJob], *, flavour: Flavour, workers: int = 2, timeout_s: int = 120
) -> dict[str, ProgramRun]:
    """Run every job (see the module docstring); returns runs by ``job.key``.

    ``timeout_s`` bounds each program (SIGALRM in its child). Runs are independent: a crash or
    timeout of one program is recorded in its :class:`ProgramRun` (``error_type``).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if flavour == "highs":
        env[HIGHS_ENV] = str(HIGHS_PACKAGE)
    with tempfile.TemporaryDirectory(prefix="trex-compat-") as root:
        workdirs: list[Path] = []
        for number, job in enumerate(jobs):
            workdir = Path(root) / f"job{number:04d}"
            workdir.mkdir()
            (workdir / "program.py").write_text(job.code, encoding="utf-8")
            for name, text in job.files.items():
                (workdir / name).write_text(text, encoding="utf-8")
            workdirs.append(workdir)
        processes = []
        for lane in range(workers):
            batch = [{"workdir": str(w), "timeout_s": timeout_s} for w in workdirs[lane::workers]]
            jobs_file = Path(root) / f"lane{lane}.json"
            jobs_file.write_text(json.dumps(batch))
            processes.append(
                subprocess.Popen(
                    [sys.executable, str(DRIVER), str(jobs_file)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            )
        for process in processes:
            _, err = process.communicate()
            if process.returncode != 0:
                raise RuntimeError(
                    f"program driver failed ({process.returncode}): {err.decode(errors='replace')}"
                )
        return {job.key: _read_run(job, workdir) for job, workdir in zip(jobs, workdirs, strict=True)}


def run_both(jobs: Sequence[ProgramJob]) -> tuple[dict[str, ProgramRun], dict[str, ProgramRun]]:
    """Every job under real gurobipy and under the layer (checking that each side got its own)."""
    real = run_programs(jobs, flavour="real")
    layer = run_programs(jobs, flavour="highs")
    assert all(not run.highs for run in real.values()), "the reference side must use real gurobipy"
    assert all(run.highs for run in layer.values()), "the other side must import gurobipy_highs"
    return real, layer


_LICENCE_LINE = re.compile(r"^Restricted license.*\n", re.MULTILINE)


def divergence(reference: ProgramRun, layer: ProgramRun) -> str | None:
    """How the layer's run differs from real gurobipy's (``None`` when it does not): the
    exception that ended it, the model's status and objective (the project's rule; equal
    infinities match) and the printed output."""
    if reference.error_type != layer.error_type:
        return f"ended with {layer.error_type} ({layer.error}), gurobipy with {reference.error_type}"
    if reference.status != layer.status:
        return f"status {layer.status}, gurobipy {reference.status}"
    ref, got = reference.objval, layer.objval
    if (ref is None) != (got is None):
        return f"ObjVal {got}, gurobipy {ref}"
    if ref is not None and got is not None and ref != got and not objectives_match(got, ref):
        return f"ObjVal {got}, gurobipy {ref}"
    if _LICENCE_LINE.sub("", reference.stdout) != _LICENCE_LINE.sub("", layer.stdout):
        return f"printed\n{layer.stdout}\ngurobipy printed\n{reference.stdout}"
    return None


# --------------------------------------------------------------------------- benchmark programs


def feasible_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The 344 B4O-Feasible rows."""
    path = data_dir / "data" / "bench4opt_feasible" / "test.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def orgeval_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The 394 B4O ORGEval rows."""
    path = data_dir / "data" / "bench4opt" / "test.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def feasible_jobs(data_dir: Path) -> list[ProgramJob]:
    """Each Feasible reference program with ``model.optimize()`` appended and its instance data."""
    folder = data_dir / "data" / "bench4opt_feasible"
    return [
        ProgramJob(
            key=row["id"],
            code=row["reference_code"] + "\nmodel.optimize()\n",
            files={"data.json": (folder / row["data_path"]).read_text()},
        )
        for row in feasible_rows(data_dir)
    ]


def orgeval_jobs(data_dir: Path) -> list[ProgramJob]:
    """Each ORGEval reference program as shipped (it writes ``model.lp``), with its data."""
    folder = data_dir / "data" / "bench4opt"
    return [
        ProgramJob(
            key=row["id"],
            code=row["reference_code"],
            files={"data.json": (folder / row["data_path"]).read_text()},
        )
        for row in orgeval_rows(data_dir)
    ]
