"""A solver library a program imports that the install lacks is the install's failure
(``needs_library``), never the model's; and ``run``/``grade`` say what to install first.

Every solver library is installed where the tests run ([solvers]); one missing from the install is
what the interpreter's own lookup (``importlib.util.find_spec``) reports, so that lookup is what
the tests take away for one library."""

from __future__ import annotations

import importlib.util
import json
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from trex_eval.records import ExecStatus, Verdict
from trex_eval.sandbox import SandboxLimits, libraries
from trex_eval.sandbox.outcome import build_execution
from trex_eval.sandbox.runtime.contract import JobReply

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "or-word-problems"
LIMITS = SandboxLimits(wall_s=10, cpu_s=4)


@pytest.fixture
def without_coptpy(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name.partition(".")[0] == "coptpy" else real(name, package)

    monkeypatch.setattr(libraries.importlib.util, "find_spec", find_spec)
    libraries.missing.cache_clear()
    yield
    libraries.missing.cache_clear()


def _reply(error_type: str, message: str) -> JobReply:
    error = {"error_type": error_type, "message": message, "errno": None, "memory": False, "output": False}
    lines = [
        {"nonce": "n", "kind": "start", "pid": 1},
        {"nonce": "n", "kind": "end", "pid": 1, "phase": "run", "exit_code": 1, "error": error},
    ]
    channel = "\n".join(json.dumps(line) for line in lines).encode()
    return JobReply(id="t", channel=channel, exit_code=1, started=True)


def test_every_hooked_library_is_known_with_its_distribution() -> None:
    known = libraries.known_libraries()
    assert {"gurobipy", "coptpy", "pulp", "ortools", "pyscipopt", "highspy", "cvxpy", "pyomo"} <= set(known)
    assert known["pyscipopt"] == "PySCIPOpt"


def test_a_missing_library_the_hooks_know_is_the_installs_failure(without_coptpy: None) -> None:
    execution = build_execution(
        _reply("ModuleNotFoundError", "No module named 'coptpy'"),
        nonce="n",
        limits=LIMITS,
        expect="solve",
        isolation="bwrap",
    )

    assert execution.status is ExecStatus.NEEDS_LIBRARY
    assert "coptpy is not installed here (pip install 'trex-eval[solvers]')" in execution.detail
    assert Verdict(execution.status.value).is_environment_failure


def test_an_unknown_or_installed_module_stays_the_programs_failure(without_coptpy: None) -> None:
    for message in ("No module named 'numpyy'", "No module named 'pulp'"):
        execution = build_execution(
            _reply("ModuleNotFoundError", message),
            nonce="n",
            limits=LIMITS,
            expect="solve",
            isolation="bwrap",
        )
        assert execution.status is ExecStatus.RUNTIME_ERROR, message


def test_imports_are_read_from_prose_and_broken_programs() -> None:
    text = "Here is the model.\n```python\nimport coptpy as cp\nfrom pulp import *\n"
    text += "import os, highspy\nx = (\n```"
    assert libraries.imported_libraries(text) == {"coptpy", "pulp", "highspy"}


def test_grade_says_what_to_install_before_it_starts(without_coptpy: None, tmp_path: Path) -> None:
    """The user's case: a completions file of coptpy programs graded on an install without it."""
    from trex_eval.run import regrade

    plan = regrade.plan_regrade(
        EXAMPLE / "completions-coptpy.jsonl",
        data_dir=None,
        rules=(),
        protocol="default",
        fields=regrade.CompletionFields(
            benchmark=str(EXAMPLE / "benchmark.yaml"),
            id_field="task_id",
            text_field="response.choices.0.message.content",
        ),
        out=tmp_path / "graded",
        show_progress=False,
    )

    wanted = "import coptpy, which is not installed here (pip install 'trex-eval[solvers]')"
    assert any(wanted in note for note in plan.notes), plan.notes
