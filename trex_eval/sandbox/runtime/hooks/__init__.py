"""Solver hooks: one small module per library, none of which imports its library at import time.

Each module exposes ``MODULE`` (the module whose import triggers the hook), ``install(module)``
(wrap the library's solve calls so they report to :data:`..capture.RECORDER`) and
``read_binding(obj)`` (status and objective of a model object of that library, or None).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import (
    coptpy,
    cvxpy,
    gurobipy,
    highspy,
    ortools_linear,
    ortools_mathopt,
    ortools_sat,
    pulp,
    pyomo,
    pyscipopt,
    scipy,
)

_MODULES = (
    gurobipy,
    coptpy,
    pulp,
    ortools_linear,
    ortools_sat,
    ortools_mathopt,
    pyomo,
    pyscipopt,
    highspy,
    scipy,
    cvxpy,
)

INSTALLERS: dict[str, Callable[[ModuleType], None]] = {hook.MODULE: hook.install for hook in _MODULES}
"""Module name -> installer, for :class:`..imports.PostImportHooks`."""

GUROBIPY_INSTALLER = gurobipy.install


def read_binding(obj: object) -> dict[str, Any] | None:
    """Library, status and objective of ``obj`` if it is a model of a hooked library, else None."""
    for hook in _MODULES:
        try:
            found: dict[str, Any] | None = hook.read_binding(obj)
        except Exception:
            found = None
        if found is not None:
            return found
    return None
