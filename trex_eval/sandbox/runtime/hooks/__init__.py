"""Solver hooks: one small module per library, none of which imports its library at import time.

Every module of this package not named ``_*`` is a hook, found here without a list, and declares:

``MODULE``        the module whose import triggers the hook.
``ORDER``         its place among the hooks (an int, unique): :func:`read_binding` asks them in
                  this order (gurobipy first), and versions are reported in it.
``WARM``          modules a worker may import itself once its programs use them (may be empty).
``WARM_ORDER``    where those go in the workers' warmable list (OR-Tools' before PuLP's).
``WARM_FIRST``    optional: modules imported before any of ``WARM`` is warmed.
``prewarm(module)``  optional: what a worker does once it has imported ``MODULE`` itself, so that
                  its forked jobs need not (gurobipy: create the default environment).
``DISTRIBUTION``  the pip distribution(s) whose version the pool and the run manifest report.
``install(module)``  wrap the library's solve calls so they report to :data:`..capture.RECORDER`.
``read_binding(obj)``  status and objective of a model object of that library, or None.

The harness reads these declarations too (``trex_eval.sandbox.pool``, ``trex_eval.run.provenance``),
so a new hook is its module and its test.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import gurobipy


def _discover() -> tuple[ModuleType, ...]:
    # A directory listing, not pkgutil: pkgutil is not otherwise imported by a worker, and every
    # module a worker holds makes each of its forks dearer. The runtime is always a directory.
    names = sorted(
        entry[:-3]
        for path in __path__
        for entry in os.listdir(path)
        if entry.endswith(".py") and not entry.startswith("_")
    )
    found = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return tuple(sorted(found, key=lambda hook: int(hook.ORDER)))


HOOKS = _discover()
"""The hook modules, in ``ORDER``."""

INSTALLERS: dict[str, Callable[[ModuleType], None]] = {hook.MODULE: hook.install for hook in HOOKS}
"""Module name -> installer, for :class:`..imports.PostImportHooks`."""

WARMABLE: tuple[str, ...] = tuple(
    name
    for hook in sorted((hook for hook in HOOKS if hook.WARM), key=lambda hook: int(hook.WARM_ORDER))
    for name in hook.WARM
)
"""Every hook's ``WARM`` modules, in ``WARM_ORDER``."""

WARM_FIRST: dict[str, tuple[str, ...]] = {
    name: tuple(hook.WARM_FIRST) for hook in HOOKS if getattr(hook, "WARM_FIRST", ()) for name in hook.WARM
}
"""Warmable module -> modules a worker imports before warming it."""

PREWARM: dict[str, Callable[[ModuleType], None]] = {
    hook.MODULE: hook.prewarm for hook in HOOKS if callable(getattr(hook, "prewarm", None))
}
"""Module name -> what a worker does after importing that module itself (never in a job)."""

DISTRIBUTIONS: tuple[str, ...] = tuple(dict.fromkeys(name for hook in HOOKS for name in hook.DISTRIBUTION))
"""The hooked libraries' distributions, in ``ORDER``, each once."""

GUROBIPY_INSTALLER = gurobipy.install


def prewarm(name: str) -> None:
    """Run the ``prewarm`` of the hook for module ``name`` (already imported by the worker), if
    it has one; a failure is ignored (jobs then do that work themselves, as without it)."""
    action = PREWARM.get(name)
    module = sys.modules.get(name)
    if action is None or module is None:
        return
    with contextlib.suppress(Exception):
        action(module)


def read_binding(obj: object) -> dict[str, Any] | None:
    """Library, status and objective of ``obj`` if it is a model of a hooked library, else None."""
    for hook in HOOKS:
        try:
            found: dict[str, Any] | None = hook.read_binding(obj)
        except Exception:
            found = None
        if found is not None:
            return found
    return None
