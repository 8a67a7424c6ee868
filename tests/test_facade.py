"""The ``trex_eval`` facade: exactly the curated names, each the object of its home module, and
lazy (``import trex_eval``, which the CLI does at start-up, loads no submodule)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import trex_eval

EXPORTS = [
    "BackendError",
    "BackendSpec",
    "BenchmarkError",
    "ChatMessage",
    "Completion",
    "ConfigError",
    "DataError",
    "ExecStatus",
    "Execution",
    "Grade",
    "GraderKind",
    "GradingError",
    "InlineProblem",
    "LinearModel",
    "ObjectiveEvidence",
    "ObjectiveReference",
    "Problem",
    "ProblemKey",
    "Program",
    "Prompt",
    "RewardRecord",
    "RewardRequest",
    "RewardScorer",
    "RunOptions",
    "RunResult",
    "RunSpec",
    "SampleRecord",
    "SamplingParams",
    "SandboxError",
    "SandboxLimits",
    "ScorerSettings",
    "SolveRecord",
    "SolveStatus",
    "StoreError",
    "StructureCheck",
    "StructureEvidence",
    "StructureReference",
    "TrexError",
    "Usage",
    "Verdict",
    "__version__",
    "evaluate",
    "get_protocol",
    "get_rule",
    "load_benchmark",
]

HOMES = {
    "RunResult": "trex_eval.run.pipeline",
    "RunSpec": "trex_eval.run.spec",
    "RunOptions": "trex_eval.run.spec",
    "load_benchmark": "trex_eval.benchmarks",
    "get_rule": "trex_eval.grading",
    "get_protocol": "trex_eval.protocols",
    "__version__": "trex_eval._version",
    **dict.fromkeys(
        ["InlineProblem", "ProblemKey", "RewardRecord", "RewardRequest", "RewardScorer", "ScorerSettings"],
        "trex_eval.reward",
    ),
}


ALIASES = {"evaluate": ("trex_eval.run.pipeline", "run")}


def _home(name: str) -> str:
    if name in HOMES:
        return HOMES[name]
    return "trex_eval.errors" if name.endswith("Error") else "trex_eval.records"


def test_all_is_exactly_the_curated_names() -> None:
    assert trex_eval.__all__ == EXPORTS
    assert set(EXPORTS) <= set(dir(trex_eval))


@pytest.mark.parametrize("name", EXPORTS)
def test_each_name_is_the_object_of_its_home_module(name: str) -> None:
    home, attribute = ALIASES.get(name, (_home(name), name))
    expected = getattr(importlib.import_module(home), attribute)
    assert getattr(trex_eval, name) is expected
    namespace: dict[str, object] = {}
    exec(f"from trex_eval import {name} as got", namespace)
    assert namespace["got"] is expected


def test_errors_are_trex_errors() -> None:
    for name in EXPORTS:
        if name.endswith("Error"):
            assert issubclass(getattr(trex_eval, name), trex_eval.TrexError)


def test_the_run_subpackage_stays_reachable_beside_evaluate() -> None:
    import trex_eval.run.pipeline as pipeline

    assert trex_eval.evaluate is pipeline.run
    assert trex_eval.run is sys.modules["trex_eval.run"]
    assert trex_eval.run.spec.RunSpec is trex_eval.RunSpec


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = trex_eval.nope  # type: ignore[attr-defined]


def test_import_trex_eval_alone_loads_no_submodule_and_no_pydantic() -> None:
    code = (
        "import sys, trex_eval\n"
        "print(sorted(m for m in sys.modules if m.startswith(('trex_eval.', 'pydantic'))))\n"
        "trex_eval.Problem\n"
        "print('trex_eval.records' in sys.modules, 'trex_eval.run.pipeline' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded, after_use = done.stdout.splitlines()
    assert loaded == "['trex_eval._version']"
    assert after_use == "True False"


def test_run_audit_and_the_report_exports_do_not_load_pandas_until_a_table_is_built() -> None:
    # pandas costs about half a second of every command; only comparisons and leaderboards need it.
    code = (
        "import sys\n"
        "import trex_eval.cli.run_cmd, trex_eval.run.audit, trex_eval.run.pipeline\n"
        "print('pandas' in sys.modules)\n"
        "import trex_eval.report as report\n"
        "print(sorted(report.__all__) == sorted(report._EXPORTS))\n"
        "print(all(getattr(report, name) is not None for name in report.__all__))\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["False", "True", "True", "False"]
