"""Warming: a worker's zygote imports a library once enough programs were written to use it, so
that later jobs are forked with it loaded (and only the first few programs pay for the import).

Which programs "use" a library is read from their text before they run (:func:`imported_names`,
a scan of their import statements), never from anything a job reports or does: a program can
make its own ``sys.modules`` say anything, and what one job does must not decide what the next
one is forked with. The demand is counted by the supervisor (:class:`Demand`); the zygote only
receives the names to import, from the fixed ``WorkerConfig.warmable`` list (:func:`warm`).

What remains visible to a later job is which warmable libraries earlier programs *named* in their
import statements (at most one bit per library for the worker's lifetime, fixed before any of
those programs ran): never a value a program computed.
"""

from __future__ import annotations

import gc
import importlib
import re
import sys

from .contract import WorkerConfig
from .hooks import WARM_FIRST, prewarm

_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<package>[A-Za-z_][\w.]*)[ \t]+import[ \t]+(?P<names>[^#\n;]+)"
    r"|import[ \t]+(?P<modules>[^#\n;]+))",
    re.MULTILINE,
)
_NAME = re.compile(r"[A-Za-z_][\w.]*")


def imported_names(code: str) -> set[str]:
    """Dotted module names the import statements of ``code`` name at the start of a line
    (``from a.b import c`` gives ``a.b`` and ``a.b.c``; ``import x as y, z`` gives ``x`` and
    ``z``). A static reading: imports built at run time are not seen, and are simply not warmed."""
    found: set[str] = set()
    for match in _IMPORT.finditer(code):
        package = match.group("package")
        if package is not None:
            found.add(package)
            for part in match.group("names").strip("() \t").split(","):
                name = _NAME.match(part.strip())
                if name:
                    found.add(f"{package}.{name.group(0)}")
            continue
        for part in match.group("modules").split(","):
            name = _NAME.match(part.strip())
            if name:
                found.add(name.group(0))
    return found


class Demand:
    """Counts, per warmable module, the programs whose text imports it (in the supervisor)."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.counts: dict[str, int] = {}
        self.done: set[str] = set(config.preload)

    def after_job(self, code: str, *, real_gurobipy: bool) -> list[str]:
        """The warmable modules to import now, given one more program ``code`` (whose gurobipy is
        the real one only when ``real_gurobipy``: the licence-free layer is not warmed)."""
        names = imported_names(code)
        wanted = []
        for module in self.config.warmable:
            if module in self.done or (module == "gurobipy" and not real_gurobipy):
                continue
            if module in names:
                self.counts[module] = self.counts.get(module, 0) + 1
                if self.counts[module] >= self.config.warm_after:
                    wanted.append(module)
                    self.done.add(module)
        return wanted


def warm(modules: list[str], warmable: tuple[str, ...]) -> list[str]:
    """Import ``modules`` (only those in ``warmable``) in this process, each after its
    ``WARM_FIRST`` modules, and prepare them (``hooks.prewarm``); the modules that failed.

    Forking a process costs more with every library it holds, so only what the workload uses
    is warmed (OR-Tools' linear solver always before PuLP: with PuLP loaded first, OR-Tools
    MathOpt solves crash with SIGSEGV)."""
    failed = []
    warmed = False
    for name in modules:
        if name not in warmable:
            continue
        for module in (*WARM_FIRST.get(name, ()), name):
            if module in sys.modules:
                continue
            try:
                importlib.import_module(module)
            except BaseException:
                failed.append(module)
                continue
            warmed = True
            prewarm(module)
    if warmed:
        gc.collect()
        gc.freeze()
    return failed
