"""Warming: the worker imports a warmable library itself once enough of its jobs imported it, so
that later forks start with it loaded (and the first programs that use it pay for the import)."""

from __future__ import annotations

import gc
import importlib
import json
import sys
from typing import Any

from .contract import WorkerConfig
from .hooks import WARM_FIRST, prewarm


class Warmer:
    """Counts, per warmable module, the jobs that imported it, and warms it at ``warm_after``."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.demand: dict[str, int] = {}
        self.warm_failed: set[str] = set()

    def after_job(self, reply: dict[str, Any], nonce: str) -> None:
        """Import in the worker the warmable modules that ``warm_after`` jobs have imported.

        Forking a worker costs more with every library it holds, so a library is warmed only
        when the workload uses it; the first few programs that use it import it themselves.
        """
        wanted = [
            name
            for name in _imported_by_job(str(reply.get("channel", "")), nonce)
            if name in self.config.warmable and name not in sys.modules and name not in self.warm_failed
        ]
        warmed = False
        for name in wanted:
            self.demand[name] = self.demand.get(name, 0) + 1
            if self.demand[name] < self.config.warm_after:
                continue
            for module in (*WARM_FIRST.get(name, ()), name):
                if module in sys.modules or module in self.warm_failed:
                    continue
                try:
                    importlib.import_module(module)
                    warmed = True
                except BaseException:
                    self.warm_failed.add(module)
                    continue
                prewarm(module)
        if warmed:
            gc.collect()
            gc.freeze()


def _imported_by_job(channel: str, nonce: str) -> list[str]:
    """The ``imported`` list of the job's ``end`` record (the last records are scanned first)."""
    for line in reversed(channel.splitlines()):
        if '"end"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "end" and record.get("nonce") == nonce:
            imported = record.get("imported")
            return [name for name in imported if isinstance(name, str)] if isinstance(imported, list) else []
    return []
