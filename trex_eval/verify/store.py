"""The persistent store of re-solve results: what a verifier process derived from a captured model
(status, objective, raw status, solver, CPU seconds), kept across runs so that a repeat audit, a
re-grade or an RL run meeting the same model again pays no second re-solve.

**Only what the harness derived.** A verdict also depends on the label, the rule@version and the
protocol; none of that is stored. An entry is the :class:`~.base.Resolve` of one re-solve, under a
key of everything that decides it (:class:`StoreKey`): the model's digest
(:func:`~.views.view_key`, the memo's canonical digest: numbers only, no names), the re-solve
code's version (:data:`RESOLVER_VERSION` and a digest of the re-solve modules' source, so that
an edit nobody remembered to version still misses), the solvers that may answer with their
versions, and the budget in CPU seconds. Only a decisive verdict (optimal, infeasible,
unbounded, infeasible-or-unbounded) that finished within its budget is written: a time-out, a
solver error or a refusal never is. Verification's re-solves go through the store; a diagnosis's
do not (their budget is what the sample's diagnosis has left, another in every run). A claim's
budget is 10 CPU s unless its program ran over 5 CPU s (:func:`~.choice.verification_budget`):
such a program's re-solve is met again only under the very same budget.

**Where.** ``TREX_RESOLVE_STORE`` (a folder; ``off`` disables it), else the user's cache
folder + ``resolves`` (``$XDG_CACHE_HOME/trex-eval/resolves``, ``~/.cache/trex-eval/resolves``):
outside every sandbox view (bubblewrap binds an allow-list that holds no home or cache folder,
and every :class:`~trex_eval.sandbox.SandboxPool` masks this folder as well where it lies in a
bound tree). The folder and its files are private to the user (0700/0600); a folder owned by
another user, or writable by others, is not used (an entry is trusted to be the harness's own
re-solve, so nobody else may write one).

**One file per key, written atomically** (a temporary file in the same folder, then
``rename``), rather than one SQLite database: writers never wait for each other (many reward
workers, several runs at once), a reader sees a whole entry or none, and deleting the folder or
any file at any time is safe (SQLite's write-ahead log beside a deleted database can corrupt the
next one). A lost or corrupt file costs one re-solve: every field of an entry is checked on read
(its key included) and an entry that fails is deleted and replaced by the next re-solve.

**Bounded.** At most :data:`MAX_ENTRIES` entries of at most :data:`MAX_ENTRY_BYTES` each; a
process prunes the least recently used (a hit touches its file) down to :data:`LOW_WATER` at its
first write and every :data:`PRUNE_EVERY` writes after, so the store exceeds the bound by at most
that many entries per writing process between two prunes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import config
from ..files import ensure_private_folder, write_private_atomically
from ..records import SolveStatus
from .base import Resolve

logger = logging.getLogger(__name__)

RESOLVER_VERSION = 1
"""The re-solve's version: bump it whenever what a re-solve returns for a model may change (a
solver option, the view of the model, the choice of solver), so that stored results of the
old code miss. The source digest of :data:`RESOLVER_MODULES` is part of the key as well."""
RESOLVER_MODULES = ("base.py", "views.py", "highs.py", "gurobi.py", "scip.py", "worker.py", "lanes.py")
"""The modules of this package whose code decides a re-solve's result."""
FORMAT = 1
"""The layout of an entry file."""
MAX_ENTRIES = 20_000
"""Entries the store keeps at most (between prunes: see the module docstring)."""
LOW_WATER = 18_000
"""Entries a prune leaves."""
MAX_ENTRY_BYTES = 1024
"""Bytes of one entry file at most (so the store holds at most ~20 MiB); a larger file is corrupt."""
PRUNE_EVERY = 256
"""Writes of one process between two prunes."""
STALE_TMP_S = 3600.0
"""Seconds after which a temporary file (of a writer that died before its rename) is removed."""
RAW_STATUS_MAX = 200
"""Characters of a solver's raw status an entry keeps at most."""
_DECISIVE = frozenset(
    (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)
)
_SOLVER_NAMES = frozenset(("gurobipy", "highs", "scip"))
"""The names a verifier process gives its solvers (:data:`~.choice.SOLVERS`)."""
_FIELDS = frozenset(("format", "key", "status", "objective", "raw_status", "solver", "cpu_s"))


@dataclass(frozen=True)
class StoreKey:
    """What decides a re-solve's result. ``model``: hex sha256 of the model's view
    (:func:`~.views.view_key`); ``code``: :data:`RESOLVER_VERSION` and the digest of
    :data:`RESOLVER_MODULES`; ``solvers``: the solvers that may answer, with their versions, in
    the order they are tried; ``budget``: the CPU seconds of the re-solve's budget (6 significant
    digits)."""

    model: str
    code: str
    solvers: str
    budget: str

    def file_name(self) -> str:
        """The entry's file name: the hex sha256 of the whole key."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest() + ".json"


@cache
def code_version() -> str:
    """:data:`RESOLVER_VERSION` and the first 16 hex digits of the sha256 of the re-solve
    modules' source (``unreadable`` where a module's source cannot be read)."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    try:
        for name in RESOLVER_MODULES:
            digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    except OSError:
        return f"{RESOLVER_VERSION}:unreadable"
    return f"{RESOLVER_VERSION}:{digest.hexdigest()[:16]}"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


@cache
def solver_versions(*, gurobi: bool) -> str:
    """The solvers a verifier process may answer with, with their installed versions: gurobipy
    first when ``gurobi`` (preferred and licensed), then HiGHS or SCIP (chosen by the model)."""
    open_solvers = f"highspy={_version('highspy')}|pyscipopt={_version('pyscipopt')}"
    return f"gurobipy={_version('gurobipy')}>{open_solvers}" if gurobi else open_solvers


def store_key(digest: bytes, *, gurobi: bool, budget_s: float) -> StoreKey:
    """The key of a re-solve of the model whose :func:`~.views.view_key` is ``digest``, within
    ``budget_s`` CPU seconds, gurobipy first when ``gurobi``."""
    return StoreKey(
        model=digest.hex(),
        code=code_version(),
        solvers=solver_versions(gurobi=gurobi),
        budget=f"{budget_s:.6g}",
    )


def admissible(result: Resolve, key: StoreKey) -> bool:
    """Whether ``result`` may be an entry under ``key``: a decisive status, a finite objective
    for an optimum (``None`` or finite otherwise), a solver of the key's list, and at most the
    key's budget in CPU seconds. The one test of a write and of a read."""
    if result.status not in _DECISIVE or result.solver not in _SOLVER_NAMES:
        return False
    if result.solver == "gurobipy" and not key.solvers.startswith("gurobipy="):
        return False
    objective = result.objective
    if objective is None:
        if result.status is SolveStatus.OPTIMAL:
            return False
    elif not math.isfinite(objective):
        return False
    within = math.isfinite(result.cpu_s) and 0.0 <= result.cpu_s <= float(key.budget)
    return within and len(result.raw_status) <= RAW_STATUS_MAX


def _entry(found: object, key: StoreKey) -> Resolve | None:
    """The :class:`Resolve` an entry file's JSON ``found`` holds for ``key``, or None where any
    field is missing, of the wrong type or out of range, or the entry is another key's."""
    if not isinstance(found, dict) or set(found) != _FIELDS or found["format"] != FORMAT:
        return None
    if found["key"] != asdict(key):
        return None
    objective, cpu_s = found["objective"], found["cpu_s"]
    if not (objective is None or type(objective) in (int, float)) or type(cpu_s) not in (int, float):
        return None
    if not isinstance(found["raw_status"], str) or not isinstance(found["solver"], str):
        return None
    try:
        status = SolveStatus(found["status"])
    except ValueError:
        return None
    result = Resolve(
        status,
        None if objective is None else float(objective),
        found["raw_status"],
        found["solver"],
        float(cpu_s),
        stored=True,
    )
    return result if admissible(result, key) else None


@dataclass(frozen=True)
class StoreStats:
    """What one process's store did: ``hits`` (results read), ``misses`` (no usable entry),
    ``written`` (results stored), ``rejected`` (entries found corrupt, deleted)."""

    hits: int = 0
    misses: int = 0
    written: int = 0
    rejected: int = 0


class ResolveStore:
    """The store at ``root`` (see the module docstring). Thread-safe; any number of processes
    may share one folder. Never raises for the store's own faults: an unreadable, corrupt or
    missing store is a miss, and a folder that cannot be written (or is not the user's own) is
    given up with one warning."""

    def __init__(self, root: Path, *, max_entries: int = MAX_ENTRIES, prune_every: int = PRUNE_EVERY) -> None:
        self.root = Path(root)
        self.max_entries = max_entries
        self.prune_every = prune_every
        self._lock = threading.Lock()
        self._stats = StoreStats()
        self._writes = 0
        self._broken: str | None = None
        self._root_checked = False

    @property
    def stats(self) -> StoreStats:
        with self._lock:
            return self._stats

    def _count(self, **more: int) -> None:
        with self._lock:
            counts = asdict(self._stats)
            self._stats = StoreStats(**{name: counts[name] + more.get(name, 0) for name in counts})

    def _path(self, key: StoreKey) -> Path:
        name = key.file_name()
        return self.root / name[:2] / name

    def get(self, key: StoreKey) -> Resolve | None:
        """The stored result for ``key`` (``stored=True``), or None. A hit marks the entry used
        (for the pruning order); a corrupt entry is deleted."""
        if self._broken is not None or not self._trusted():
            self._count(misses=1)
            return None
        path = self._path(key)
        try:
            text = _read(path)
        except OSError:  # none yet, or gone: a miss
            self._count(misses=1)
            return None
        try:
            found = None if text is None else _entry(json.loads(text), key)
        except (ValueError, RecursionError):
            found = None
        if found is None:
            with contextlib.suppress(OSError):
                path.unlink()
            self._count(misses=1, rejected=1)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        self._count(hits=1)
        return found

    def put(self, key: StoreKey, result: Resolve) -> bool:
        """Store ``result`` under ``key`` when :func:`admissible` (else nothing); True when written."""
        if self._broken is not None or result.stored or not admissible(result, key):
            return False
        entry = {
            "format": FORMAT,
            "key": asdict(key),
            "status": result.status.value,
            "objective": result.objective,
            "raw_status": result.raw_status,
            "solver": result.solver,
            "cpu_s": result.cpu_s,
        }
        data = json.dumps(entry, allow_nan=False, sort_keys=True).encode()
        if len(data) > MAX_ENTRY_BYTES:
            return False
        for attempt in range(2):
            try:
                self._check_root()
                write_private_atomically(self._path(key), data)
                break
            except FileNotFoundError:  # the folder was deleted meanwhile: made again once
                if attempt:
                    return False
            except OSError as error:
                self._give_up(f"it cannot be written ({type(error).__name__}: {error})")
                return False
        self._count(written=1)
        with self._lock:
            self._writes += 1
            due = self._writes % self.prune_every == 1 or self.prune_every == 1
        if due:
            self.prune()
        return True

    def _trusted(self) -> bool:
        """Whether the folder, where it exists, is the user's own (checked once per process; a
        missing folder is checked again next time). One that is not is given up."""
        if self._root_checked:
            return True
        if not self.root.exists():
            return True
        try:
            self._check_root()
        except OSError as error:
            self._give_up(str(error))
            return False
        return True

    def _check_root(self) -> None:
        """Create the folder (0700) where it is missing; refuse one that is not the user's own.

        Raises:
            OSError: it cannot be created, or is owned by another user or writable by others.
        """
        ensure_private_folder(self.root)
        self._root_checked = True

    def _give_up(self, why: str) -> None:
        with self._lock:
            if self._broken is not None:
                return
            self._broken = why
        logger.warning(
            "the re-solve store %s is not used for the rest of this process: %s; re-solves are "
            "paid as usual (set TREX_RESOLVE_STORE to a folder of your own, or to off)",
            self.root,
            why,
        )

    def prune(self) -> int:
        """Delete the least recently used entries beyond :data:`LOW_WATER` (scaled to this
        store's ``max_entries``) once there are more than ``max_entries``, and temporary files
        older than :data:`STALE_TMP_S`; returns the entries deleted. Concurrent prunes are safe."""
        entries: list[tuple[float, str]] = []
        now = time.time()
        try:
            shards = [item.path for item in os.scandir(self.root) if item.is_dir(follow_symlinks=False)]
        except OSError:
            return 0
        for shard in shards:
            entries += _shard_entries(shard, now)
        if len(entries) <= self.max_entries:
            return 0
        keep = self.max_entries * LOW_WATER // MAX_ENTRIES
        entries.sort()
        deleted = 0
        for _, path in entries[: len(entries) - keep]:
            with contextlib.suppress(OSError):
                os.unlink(path)
                deleted += 1
        return deleted

    def describe(self) -> dict[str, Any]:
        """The store as a run manifest records it."""
        return {
            "enabled": self._broken is None,
            "path": str(self.root),
            "resolver": code_version(),
            "max_entries": self.max_entries,
            **({"not_used": self._broken} if self._broken is not None else {}),
        }


def _shard_entries(shard: str, now: float) -> list[tuple[float, str]]:
    """(last use, path) of each entry of the folder ``shard``; its temporary files older than
    :data:`STALE_TMP_S` deleted. What vanishes meanwhile (another prune) is left out."""
    found: list[tuple[float, str]] = []
    with contextlib.suppress(OSError), os.scandir(shard) as items:
        for item in items:
            try:
                when = item.stat(follow_symlinks=False).st_mtime
                if item.name.endswith(".tmp") and now - when > STALE_TMP_S:
                    os.unlink(item.path)
            except OSError:
                continue
            if item.name.endswith(".json"):
                found.append((when, item.path))
    return found


def _read(path: Path) -> str | None:
    """The text of the entry file at ``path`` (never through a symbolic link), or None when it is
    over :data:`MAX_ENTRY_BYTES` or not text.

    Raises:
        OSError: it cannot be opened or read (FileNotFoundError: there is none).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


_STORES: dict[Path, ResolveStore] = {}
_STORES_LOCK = threading.Lock()


def resolve_store() -> ResolveStore | None:
    """This process's store at :func:`trex_eval.config.resolve_store_dir` (read on every call,
    so a changed ``TREX_RESOLVE_STORE`` takes effect), or None where it is ``off``."""
    root = config.resolve_store_dir()
    if root is None:
        return None
    with _STORES_LOCK:
        found = _STORES.get(root)
        if found is None:
            found = _STORES[root] = ResolveStore(root)
        return found


def describe() -> dict[str, Any]:
    """Whether this process uses the store, and where (a run manifest's ``provenance``)."""
    store = resolve_store()
    if store is None:
        why = config.resolve_store_withdrawn() or "TREX_RESOLVE_STORE=off"
        return {"enabled": False, "path": None, "not_used": why}
    return store.describe()


def through_store(
    digest: bytes,
    *,
    prefer_gurobi: bool,
    gurobi_available: Callable[[], bool],
    budget_s: float,
    compute: Callable[[], Resolve],
) -> Resolve:
    """The result of re-solving the model whose view digest is ``digest`` within ``budget_s`` CPU
    seconds, gurobipy first where ``prefer_gurobi`` and ``gurobi_available()``: the stored one
    where there is one, else ``compute()``'s, stored when :func:`admissible`.

    With ``prefer_gurobi`` the entry of a gurobipy-first re-solve is looked up before anything
    asks ``gurobi_available`` (which starts a verifier process): that entry is what a licensed
    gurobipy of the installed version derived within the same budget, so it decides the claim
    whether or not this process could run gurobipy now, and a run whose every claim is stored
    starts no verifier process. ``compute``'s exceptions pass through (nothing is stored)."""
    store = resolve_store()
    if store is None:
        return compute()
    key = store_key(digest, gurobi=prefer_gurobi, budget_s=budget_s)
    found = store.get(key)
    if found is not None:
        return found
    gurobi = prefer_gurobi and gurobi_available()
    if gurobi != prefer_gurobi:
        key = store_key(digest, gurobi=False, budget_s=budget_s)
        found = store.get(key)
        if found is not None:
            return found
    result = compute()
    store.put(key, result)
    return result
