"""trex-eval: zero-shot evaluation of LLMs on Operations Research benchmarks.

A curated, lazy facade over the packages most programs need::

    import trex_eval

    spec = trex_eval.RunSpec(...)
    result = trex_eval.evaluate(spec, trex_eval.RunOptions(...))

Every name in ``__all__`` is imported from its home module on first use (PEP 562), so that
``import trex_eval`` (which the CLI does at start-up) loads no pydantic model and no submodule.

``evaluate`` is :func:`trex_eval.run.pipeline.run`: the name ``run`` belongs to the run-stage
subpackage ``trex_eval.run``, which the import system binds on the package whenever one of its
modules is imported, so a function of that name would not stay reachable.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trex_eval._version import __version__

if TYPE_CHECKING:
    from trex_eval.benchmarks import load_benchmark as load_benchmark
    from trex_eval.errors import BackendError as BackendError
    from trex_eval.errors import BenchmarkError as BenchmarkError
    from trex_eval.errors import ConfigError as ConfigError
    from trex_eval.errors import DataError as DataError
    from trex_eval.errors import GradingError as GradingError
    from trex_eval.errors import SandboxError as SandboxError
    from trex_eval.errors import StoreError as StoreError
    from trex_eval.errors import TrexError as TrexError
    from trex_eval.grading import get_rule as get_rule
    from trex_eval.protocols import get_protocol as get_protocol
    from trex_eval.records import BackendSpec as BackendSpec
    from trex_eval.records import ChatMessage as ChatMessage
    from trex_eval.records import Completion as Completion
    from trex_eval.records import ExecStatus as ExecStatus
    from trex_eval.records import Execution as Execution
    from trex_eval.records import Grade as Grade
    from trex_eval.records import GraderKind as GraderKind
    from trex_eval.records import LinearModel as LinearModel
    from trex_eval.records import ObjectiveEvidence as ObjectiveEvidence
    from trex_eval.records import ObjectiveReference as ObjectiveReference
    from trex_eval.records import Problem as Problem
    from trex_eval.records import Program as Program
    from trex_eval.records import Prompt as Prompt
    from trex_eval.records import SampleRecord as SampleRecord
    from trex_eval.records import SamplingParams as SamplingParams
    from trex_eval.records import SandboxLimits as SandboxLimits
    from trex_eval.records import SolveRecord as SolveRecord
    from trex_eval.records import SolveStatus as SolveStatus
    from trex_eval.records import StructureCheck as StructureCheck
    from trex_eval.records import StructureEvidence as StructureEvidence
    from trex_eval.records import StructureReference as StructureReference
    from trex_eval.records import Usage as Usage
    from trex_eval.records import Verdict as Verdict
    from trex_eval.reward import InlineProblem as InlineProblem
    from trex_eval.reward import ProblemKey as ProblemKey
    from trex_eval.reward import RewardRecord as RewardRecord
    from trex_eval.reward import RewardRequest as RewardRequest
    from trex_eval.reward import RewardScorer as RewardScorer
    from trex_eval.reward import ScorerSettings as ScorerSettings
    from trex_eval.run.pipeline import RunResult as RunResult
    from trex_eval.run.pipeline import run as evaluate
    from trex_eval.run.spec import RunOptions as RunOptions
    from trex_eval.run.spec import RunSpec as RunSpec

_RECORDS = (
    "BackendSpec",
    "ChatMessage",
    "Completion",
    "ExecStatus",
    "Execution",
    "Grade",
    "GraderKind",
    "LinearModel",
    "ObjectiveEvidence",
    "ObjectiveReference",
    "Problem",
    "Program",
    "Prompt",
    "SampleRecord",
    "SamplingParams",
    "SandboxLimits",
    "SolveRecord",
    "SolveStatus",
    "StructureCheck",
    "StructureEvidence",
    "StructureReference",
    "Usage",
    "Verdict",
)
_ERRORS = (
    "BackendError",
    "BenchmarkError",
    "ConfigError",
    "DataError",
    "GradingError",
    "SandboxError",
    "StoreError",
    "TrexError",
)

_REWARD = ("InlineProblem", "ProblemKey", "RewardRecord", "RewardRequest", "RewardScorer", "ScorerSettings")

# public name -> its home module, imported on first use
_HOMES: dict[str, str] = {
    **dict.fromkeys(_RECORDS, "trex_eval.records"),
    **dict.fromkeys(_ERRORS, "trex_eval.errors"),
    "RunOptions": "trex_eval.run.spec",
    "RunResult": "trex_eval.run.pipeline",
    "RunSpec": "trex_eval.run.spec",
    **dict.fromkeys(_REWARD, "trex_eval.reward"),
    "get_protocol": "trex_eval.protocols",
    "get_rule": "trex_eval.grading",
    "load_benchmark": "trex_eval.benchmarks",
    "evaluate": "trex_eval.run.pipeline",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), "run" if name == "evaluate" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
