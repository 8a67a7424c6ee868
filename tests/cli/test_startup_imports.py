"""What the CLI's first screen costs (issue 44): ``trex-eval --help`` and a command's ``--help``
load typer and rich and the command modules, not the harness (pydantic records, the store, the
sandbox, verification, data loading, reports); the commands import those when they run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trex_eval.cli.options import OBJECTIVE_RULES, STRUCTURE_RULES
from trex_eval.grading import families
from trex_eval.records import GraderKind

NOT_AT_HELP = (
    "pydantic",
    "pandas",
    "numpy",
    "pyarrow",
    "jinja2",
    "yaml",
    "asyncio",
    "trex_eval.records",
    "trex_eval.vocabulary",
    "trex_eval.store",
    "trex_eval.sandbox",
    "trex_eval.verify",
    "trex_eval.run",
    "trex_eval.grading",
    "trex_eval.benchmarks",
    "trex_eval.prompting",
    "trex_eval.backends",
    "trex_eval.report",
    "trex_eval.reward",
)
"""Modules (and their submodules) that printing help must not load."""

_PROBE = """
import contextlib, io, json, sys
sys.argv = ["trex-eval", *json.loads(sys.argv[1])]
from trex_eval.__main__ import entry
shown = io.StringIO()
try:
    with contextlib.redirect_stdout(shown):
        entry()
except SystemExit as exit_:
    code = exit_.code
print(json.dumps({"code": code, "help": shown.getvalue(), "modules": sorted(sys.modules)}))
"""


def _help_run(arguments: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("arguments", [["--help"], ["run", "--help"], ["audit", "--help"]])
def test_help_loads_none_of_the_harness(arguments: list[str]) -> None:
    shown = _help_run(arguments)

    assert shown["code"] == 0 and "Usage" in str(shown["help"])
    modules = shown["modules"]
    assert isinstance(modules, list)
    # A command's own help goes through typer's parameter adapters, which import pydantic.
    barred = NOT_AT_HELP if arguments == ["--help"] else tuple(m for m in NOT_AT_HELP if m != "pydantic")
    loaded = sorted(
        name for name in modules if any(name == heavy or name.startswith(f"{heavy}.") for heavy in barred)
    )
    assert loaded == []


def test_run_help_names_every_shipped_rule_family() -> None:
    # --rule's help is written out (the registry would load the records at start-up): it must
    # name the registry's families, in its order.
    assert tuple(f.name for f in families(GraderKind.OBJECTIVE)) == OBJECTIVE_RULES
    assert tuple(f.name for f in families(GraderKind.STRUCTURE)) == STRUCTURE_RULES
    shown = " ".join(str(_help_run(["run", "--help"])["help"]).split())
    for name in (*OBJECTIVE_RULES, *STRUCTURE_RULES):
        assert name in shown


_BLAS = """
import json, os, subprocess, sys
from trex_eval import config
config.single_threaded_blas()
import numpy  # OpenBLAS reads the variable as it loads
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
                       env=config.environment(), capture_output=True, text=True, check=True).stdout.strip()
print(json.dumps({"here": os.environ.get("OPENBLAS_NUM_THREADS"), "child": child}))
"""


@pytest.mark.parametrize(("chosen", "here", "child"), [(None, "1", "None"), ("3", "3", "3")])
def test_the_harness_blas_gets_one_thread_that_no_child_server_inherits(
    chosen: str | None, here: str, child: str
) -> None:
    # OpenBLAS's idle threads spin ~0.1 CPU s as NumPy loads; a user's own choice stands, and a
    # model server the harness starts gets the user's environment, not the harness's setting.
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
    done = subprocess.run([sys.executable, "-c", _BLAS], env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {"here": here, "child": child}
