"""What the CLI's first screen costs (issue 44): ``trex-eval --help`` and a command's ``--help``
load typer and rich and the command modules, not the harness (pydantic records, the store, the
sandbox, verification, data loading, reports); the commands import those when they run."""

from __future__ import annotations

import json
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
