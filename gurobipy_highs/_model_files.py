"""``Model.write``: the model (LP, MPS), its IIS (ILP), its solution (SOL, MST) or its
parameters (PRM)."""

from __future__ import annotations

import bz2
import gzip
from collections.abc import Callable

from ._errors import CompatNotImplementedError, GurobiError
from ._iis import iis_snapshot
from ._lp_writer import write_lp
from ._mps_writer import write_mps
from ._numfmt import gurobi_number
from ._state import ModelState, build_snapshot

_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {".gz": gzip.compress, ".bz2": bz2.compress}


def write_file(state: ModelState, filename: str) -> None:
    """Write the model (``.lp``, ``.mps``), its IIS (``.ilp``, after ``computeIIS``), its
    solution (``.sol``, ``.mst``) or its parameters (``.prm``); ``.gz``/``.bz2`` compress.
    Other formats raise ``CompatNotImplementedError``. The model must be up to date
    (``Model.write`` updates it)."""
    path = str(filename)
    compression = next((suffix for suffix in _COMPRESSORS if path.endswith(suffix)), "")
    base = path[: len(path) - len(compression)]
    extension = base.rsplit(".", 1)[-1].lower() if "." in base else ""
    writers: dict[str, Callable[[ModelState], str]] = {
        "lp": lambda s: write_lp(build_snapshot(s)),
        "ilp": _iis_text,
        "mps": lambda s: write_mps(build_snapshot(s)),
        "sol": _solution_text,
        "mst": _start_text,
        "prm": _params_text,
    }
    if extension not in writers:
        raise CompatNotImplementedError(f"Model.write() of '.{extension}' files")
    data = writers[extension](state).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(_COMPRESSORS[compression](data) if compression else data)


def _iis_text(state: ModelState) -> str:
    """The IIS of the last ``computeIIS`` in LP format (Gurobi's ``.ilp``)."""
    if state.iis is None:
        raise GurobiError(10005, "No IIS available for current model")
    return write_lp(iis_snapshot(build_snapshot(state), state.iis))


def _solution_text(state: ModelState) -> str:
    """gurobipy's ``.sol`` layout: two comment lines, then ``name value`` per variable."""
    if state.outcome is None or state.outcome.x is None:
        raise GurobiError(10005, "Unable to retrieve attribute 'X'")
    lines = [
        f"# Solution for model {state.name}",
        f"# Objective value = {gurobi_number(state.outcome.objval or 0.0)}",
    ]
    lines.extend(
        f"{v._props['VarName']} {gurobi_number(x)}" for v, x in zip(state.vars, state.outcome.x, strict=True)
    )
    return "\n".join(lines) + "\n"


def _start_text(state: ModelState) -> str:
    """gurobipy's ``.mst`` layout: the integer variables' values of the solution."""
    if state.outcome is None or state.outcome.x is None:
        raise GurobiError(10005, "Unable to retrieve attribute 'X'")
    lines = ["# MIP start"]
    lines.extend(
        f"{v._props['VarName']} {gurobi_number(x)}"
        for v, x in zip(state.vars, state.outcome.x, strict=True)
        if v._props["VType"] != "C"
    )
    return "\n".join(lines) + "\n"


def _params_text(state: ModelState) -> str:
    """gurobipy's ``.prm`` layout: ``Name  value`` per changed parameter."""
    changed = state.params.changed()
    return "".join(f"{name}  {value}\n" for name, value in changed.items())
