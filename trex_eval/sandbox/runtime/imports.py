"""Import-time machinery inside the sandbox.

* :class:`PostImportHooks` installs a solver hook right after its module finishes importing, so
  libraries the worker did not pre-import are hooked too (cvxpy, pyomo, gurobipy_highs).
* :class:`GurobipySwitch` decides, in the forked job, which gurobipy ``import gurobipy`` yields:
  the real one (pre-imported by the worker or imported now), or the licence-free gurobipy_highs
  layer, loaded from its folder under the name ``gurobipy``.
  Either way the import itself is observed, so the harness can record which implementation the
  program saw.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.abc import Loader as _Loader
    from importlib.abc import MetaPathFinder as _MetaPathFinder
else:
    _Loader = _MetaPathFinder = object

from .capture import RECORDER, describe_failure

Installer = Callable[[ModuleType], None]


def install_safely(name: str, installer: Installer, module: ModuleType) -> None:
    """Run ``installer`` on ``module``; a failure is reported, never raised into the program."""
    try:
        installer(module)
    except Exception as error:
        message = f"hook for {name} not installed: {describe_failure(error)}"
        RECORDER.note(message)
        print(f"trex sandbox: {message}", file=sys.stderr)


class _HookingLoader(_Loader):
    """Delegates to the real loader, then runs ``after(module)`` once the module executed.

    The finders and loaders here derive from ``importlib.abc`` only for the type checker:
    importing it pulls ``importlib.resources``, ``pathlib``, ``tempfile`` and more into every
    worker (about 2 MB and 30 modules), and every module a worker holds makes each of its forks
    dearer. The import system needs only the methods.
    """

    def __init__(self, loader: Any, after: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Libraries introspect __loader__ (pkgutil, importlib.resources): give them the real one.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._after(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _RuntimeFinder(_MetaPathFinder):
    """Base of the runtime's own finders; they look past each other, never through each other
    (two of them asking each other would recurse without end)."""


_SEARCHING: set[tuple[int, str]] = set()
"""(finder, module) pairs whose search through the other finders is under way."""


def _find_with_others(
    finder: object, fullname: str, path: Sequence[str] | None
) -> importlib.machinery.ModuleSpec | None:
    """The first spec another finder of ``sys.meta_path`` gives for ``fullname``. A library's
    finder that itself asks every other finder (Pyomo's deferred imports) asks ``finder`` back:
    that inner ask gets None, so the library's finder goes on to the path finder (the two asked
    each other until ``RecursionError``, and Pyomo found no gurobipy in the sandbox)."""
    key = (id(finder), fullname)
    if key in _SEARCHING:
        return None
    _SEARCHING.add(key)
    try:
        for other in sys.meta_path:
            if other is finder or isinstance(other, _RuntimeFinder) or not hasattr(other, "find_spec"):
                continue
            spec: importlib.machinery.ModuleSpec | None = other.find_spec(fullname, path)
            if spec is not None:
                return spec
        return None
    finally:
        _SEARCHING.discard(key)


class PostImportHooks(_RuntimeFinder):
    """Meta-path finder that hooks modules named in ``installers`` when they are first imported."""

    def __init__(self, installers: dict[str, Installer]) -> None:
        self._pending = dict(installers)

    def install_loaded(self) -> None:
        """Hook every pending module that is already imported."""
        for name in [name for name in self._pending if name in sys.modules]:
            install_safely(name, self._pending.pop(name), sys.modules[name])

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        installer = self._pending.get(fullname)
        if installer is None:
            return None
        spec = _find_with_others(self, fullname, path)
        if spec is None or spec.loader is None:
            return None

        def after(module: ModuleType) -> None:
            if self._pending.pop(fullname, None) is not None:
                install_safely(fullname, installer, module)

        spec.loader = _HookingLoader(spec.loader, after)
        return spec


def real_gurobipy_label(module: ModuleType) -> str:
    try:
        return "gurobipy " + ".".join(str(part) for part in module.gurobi.version())
    except Exception:
        return "gurobipy"


def highs_label(module: ModuleType) -> str:
    """``"gurobipy_highs <its own version>"`` (the layer's ``GUROBIPY_HIGHS`` marker)."""
    version = getattr(module, "GUROBIPY_HIGHS", None)
    return f"gurobipy_highs {version}" if isinstance(version, str) else "gurobipy_highs"


class _ReexposeLoader(_Loader):
    """Hands back an already-imported module object (no re-execution)."""

    def __init__(self, module: ModuleType, on_import: Callable[[], None]) -> None:
        self._module = module
        self._on_import = on_import

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        original_spec = getattr(self._module, "__trex_spec__", None)
        if original_spec is not None:
            module.__spec__ = original_spec
        self._on_import()


class GurobipySwitch(_RuntimeFinder):
    """Serves ``import gurobipy`` in a job and reports (once) which implementation it gave.

    Args:
        mode: ``"real"`` (the worker's pre-imported gurobipy, or a normal import) or ``"highs"``.
        highs_package: folder of the gurobipy_highs package, loaded as ``gurobipy`` in ``highs``
            mode (its submodules then resolve as ``gurobipy._model`` etc. through ``__path__``).
        hook: installer for the gurobipy hooks (applied to the layer's module after import).
    """

    def __init__(self, mode: str, highs_package: str, hook: Installer) -> None:
        self.mode = mode
        self.highs_package = highs_package
        self._hook = hook
        self._saved: ModuleType | None = None
        self._reported = False

    def activate(self) -> None:
        """Take gurobipy out of ``sys.modules`` so the program's import comes through here."""
        if self.mode == "real":
            saved = sys.modules.pop("gurobipy", None)
            if saved is not None:
                saved.__trex_spec__ = saved.__spec__  # type: ignore[attr-defined]
            self._saved = saved
        else:
            for name in [name for name in sys.modules if name == "gurobipy" or name.startswith("gurobipy.")]:
                del sys.modules[name]
            importlib.invalidate_caches()
        sys.meta_path.insert(0, self)

    def _report(self, implementation: str) -> None:
        if not self._reported:
            self._reported = True
            RECORDER.emit("gurobipy", {"implementation": implementation})

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "gurobipy":
            return None
        if self.mode == "real":
            if self._saved is not None:
                saved = self._saved
                return importlib.util.spec_from_loader(
                    "gurobipy",
                    _ReexposeLoader(saved, lambda: self._report(real_gurobipy_label(saved))),
                    is_package=True,
                )
            # Not imported by the worker: a normal import, hooked here.
            spec = _find_with_others(self, fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _HookingLoader(spec.loader, self._after_real_import)
            return spec
        package = os.path.join(self.highs_package, "__init__.py")
        if not self.highs_package or not os.path.isfile(package):
            RECORDER.emit("gurobipy", {"implementation": None, "highs_missing": self.highs_package})
            raise ModuleNotFoundError(
                f"gurobipy_highs layer requested but not installed (no {package})", name="gurobipy"
            )
        spec = importlib.util.spec_from_file_location(
            "gurobipy", package, submodule_search_locations=[self.highs_package]
        )
        if spec is None or spec.loader is None:
            return None
        spec.loader = _HookingLoader(spec.loader, self._after_highs_import)
        return spec

    def _after_real_import(self, module: ModuleType) -> None:
        install_safely("gurobipy", self._hook, module)
        self._report(real_gurobipy_label(module))

    def _after_highs_import(self, module: ModuleType) -> None:
        install_safely("gurobipy", self._hook, module)
        self._report(highs_label(module))
