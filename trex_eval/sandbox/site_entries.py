"""Which entries of a site-packages folder programs see: the solver distributions the runtime
hooks, NumPy, and everything their metadata says they require, read from each distribution's
``RECORD``. Everything else installed beside them (the harness, its secrets-adjacent packages,
the model libraries) stays outside the sandbox's view."""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import importlib.metadata
import os
import re
import sys
from pathlib import Path
from typing import NamedTuple

from . import start_facts
from .runtime import hooks

SOLVER_DISTRIBUTIONS = (*hooks.DISTRIBUTIONS, "numpy", "packaging")
"""Distributions of the solver libraries the runtime hooks (each hook declares its own), NumPy,
and ``packaging``, which Pyomo's solver plugins use without declaring it (without it, a worker
that had warmed CVXPY failed to import ``pyomo.environ`` at ``packaging.version``, and every
Pyomo job stayed cold): with their dependencies (from their metadata), the only site-packages
entries programs see under bubblewrap."""


def distribution_key(name: str) -> str:
    """A distribution's normalised name (PEP 503): how manifests and the sandbox view compare them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(distribution: importlib.metadata.Distribution) -> list[str]:
    """Names of the distributions ``distribution`` requires, without optional extras."""
    names = []
    for text in distribution.requires or ():
        try:
            from packaging.requirements import InvalidRequirement, Requirement
        except ImportError:  # pragma: no cover - packaging ships with every pip
            found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
            if found and "extra" not in text.partition(";")[2]:
                names.append(found.group(1))
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.append(requirement.name)
    return names


@functools.cache
def solver_closure(roots: tuple[str, ...] = SOLVER_DISTRIBUTIONS) -> frozenset[str]:
    """Normalised names of the installed ``roots`` and of every distribution they need."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if distribution_key(name) in seen:
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(distribution_key(name))
        todo.extend(_requirements(distribution))
    return frozenset(seen)


def _owned_entries(files: list[tuple[tuple[str, ...], bool]], depth: int = 0) -> list[tuple[str, ...]]:
    """The shortest path prefixes whose files all belong to allowed distributions; ``files`` are
    (path parts, allowed) pairs sharing their first ``depth`` parts."""
    groups: dict[str, list[tuple[tuple[str, ...], bool]]] = {}
    for parts, allowed in files:
        if len(parts) > depth:
            groups.setdefault(parts[depth], []).append((parts, allowed))
    kept: list[tuple[str, ...]] = []
    for group in groups.values():
        if not any(allowed for _, allowed in group):
            continue
        if all(allowed for _, allowed in group) or all(len(parts) == depth + 1 for parts, _ in group):
            kept.append(group[0][0][: depth + 1])
        else:
            kept.extend(_owned_entries(group, depth + 1))
    return kept


class _Listed(NamedTuple):
    """A distribution of the site folder, as :func:`solver_entries` reads it: its ``RECORD``
    text, whether it is allowed, its top-level names and its paths where already split."""

    distribution: importlib.metadata.Distribution
    record: str | None
    allowed: bool
    tops: set[str]
    paths: list[tuple[str, ...]] | None


@functools.cache
def solver_entries(site: str, roots: tuple[str, ...] = SOLVER_DISTRIBUTIONS) -> tuple[str, ...]:
    """Paths under the site-packages folder ``site`` that the solver distributions and their
    dependencies installed (from their ``RECORD``): top-level packages, modules, ``.libs`` and
    ``.dist-info`` folders; a folder shared with other distributions (a namespace package such as
    ``google``) contributes only the allowed distributions' own entries.

    Remembered between commands (:mod:`.start_facts`) under the folder's listing, with the size,
    inode and status-change time of every ``.dist-info`` folder's ``RECORD`` and ``METADATA``, and
    the interpreter's path (where :func:`solver_closure` reads requirements): an install, an
    upgrade or a removal changes the key. A remembered path is believed only where it still lies
    below ``site`` once every link is resolved."""
    key = _listing_key(site, roots)
    found = None if key is None else start_facts.recall("site-entries", key)
    if isinstance(found, list) and _all_entries(site, found):
        return tuple(found)
    entries = _read_solver_entries(site, roots)
    if key is not None:
        start_facts.remember("site-entries", key, list(entries))
    return entries


def _listing_key(site: str, roots: tuple[str, ...]) -> dict[str, object] | None:
    """What :func:`solver_entries` of ``site`` depends on; None where it cannot be read."""
    try:
        names = sorted(os.listdir(site))
        stamps = []
        for name in names:
            if name.endswith(".dist-info"):
                for part in ("RECORD", "METADATA"):
                    with contextlib.suppress(FileNotFoundError):
                        found = os.stat(os.path.join(site, name, part))
                        stamps.append((name, part, found.st_size, found.st_ctime_ns, found.st_ino))
        code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    except OSError:
        return None
    return {"code": code, "site": site, "path": sys.path, "roots": roots, "names": names, "records": stamps}


def _all_entries(site: str, paths: list[object]) -> bool:
    """Whether every remembered path is one :func:`solver_entries` could answer: text, normalised,
    present, and below ``site`` with every link resolved."""
    real_site = os.path.realpath(site)
    for path in paths:
        if not isinstance(path, str) or os.path.normpath(path) != path or not os.path.lexists(path):
            return False
        if not path.startswith(site.rstrip("/") + "/"):
            return False
        if os.path.commonpath((real_site, os.path.realpath(path))) != real_site:
            return False
    return True


def _read_solver_entries(site: str, roots: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`solver_entries`, read from the distributions' metadata."""
    allowed = solver_closure(roots)
    listed: list[_Listed] = []
    for distribution in importlib.metadata.distributions(path=[site]):
        # The folder's own name where it has one (``Name`` would parse every METADATA file).
        name = getattr(distribution, "_normalized_name", None) or distribution.metadata["Name"] or ""
        record = distribution.read_text("RECORD")
        tops, paths = _record_tops(record), None
        if tops is None:
            paths = _installed_paths(distribution, record)
            tops = {parts[0] for parts in paths}
        listed.append(_Listed(distribution, record, distribution_key(name) in allowed, tops, paths))
    # Only a top-level name that allowed and other distributions share (a namespace folder such as
    # ``google``) needs their paths below it; every other one is an entry of its own.
    mine = set().union(*(item.tops for item in listed if item.allowed))
    shared = mine & set().union(*(item.tops for item in listed if not item.allowed))
    files: list[tuple[tuple[str, ...], bool]] = []
    for distribution, record, allowed_one, tops, paths in listed:
        if allowed_one:
            files.extend(((top,), True) for top in tops - shared)
        if not tops.isdisjoint(shared):
            if paths is None:
                paths = _installed_paths(distribution, record)
            files.extend((parts, allowed_one) for parts in paths if parts[0] in shared)
    found = {os.path.join(site, *parts) for parts in _owned_entries(files)}
    return tuple(sorted(path for path in found if os.path.lexists(path)))


def _record_tops(record: str | None) -> set[str] | None:
    """The first parts of the paths :func:`_installed_paths` reads from ``record``, without
    splitting every path; None where that takes the full parse (no ``RECORD``, quoted fields,
    ``.`` or ``..`` inside a path)."""
    # A quoted field may hold a line break, and only the CSV reader knows where its row ends.
    if record is None or '"' in record:
        return None
    tops = set()
    for line in record.splitlines():
        path = line.partition(",")[0]
        if not path or path.startswith(("/", "../")) or path == "..":
            continue  # rows _installed_paths leaves out
        if path.startswith("./") or "/." in path or path == ".":
            return None
        tops.add(path.partition("/")[0])
    return tops


def _installed_paths(
    distribution: importlib.metadata.Distribution, record: str | None
) -> list[tuple[str, ...]]:
    """The relative paths (as parts) ``distribution`` installed, absolute ones and any with
    ``..`` left out. Read from ``RECORD`` as text where there is one: ``distribution.files``
    makes a path object per file (27,000 for the solver libraries here: half a second of every
    pool start); the same parts as ``PurePosixPath(file).parts`` (RECORD paths use ``/``).
    ``record`` is the distribution's ``RECORD`` text, None where it has none."""
    if record is None:
        listed = [(Path(file).parts, Path(file).is_absolute()) for file in distribution.files or ()]
    else:
        listed = [
            (tuple(part for part in row[0].split("/") if part not in ("", ".")), row[0].startswith("/"))
            for row in csv.reader(record.splitlines())
            if row and row[0]
        ]
    return [parts for parts, absolute in listed if parts and ".." not in parts and not absolute]
