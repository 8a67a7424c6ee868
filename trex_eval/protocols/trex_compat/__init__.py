"""The ``trex-compat`` protocol: the published SLAI T-Rex harness, bugs included.

One module per section of the reference harness (``../shared/docs/reference-harness.md``):

* :mod:`.extract` -- §3.1/§3.2, the extractors (``trex-compat-solver``, ``trex-compat-orgeval``);
* :mod:`.rewrite` -- §3.3/§3.4, the code rewrites before execution;
* :mod:`.objective` -- §4.1/§5.1, the ``trex-compat`` rule (module-level ``model``/``m``, 1e-6 absolute);
* :mod:`.structure` -- §5.2, the ``orgeval-trex-compat`` rule;
* :mod:`.summary` -- §6.4, the summary row;
* this module -- §4, the execution: 360 s for solver targets and 180 s for an ORGEval evaluation,
  the instance as ``data.json`` (or ``{"question": ...}`` for answer-only items) behind an
  absolute path, the wrapper's implicit imports, and the LP file the rewritten ORGEval program
  writes (it counts only if that file exists, as upstream).

Benchmark YAML may override the rule and extractor with ``grader.compat_rule`` and
``grader.compat_extractor``; without them the kind decides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow
from trex_eval.protocols.trex_compat.rewrite import orgeval_rewrite, solver_rewrite
from trex_eval.protocols.trex_compat.summary import summary_row
from trex_eval.records import Execution, GraderKind, Problem, SampleRecord
from trex_eval.sandbox import WORKDIR_TOKEN, Job, SandboxLimits

WALL_S: Mapping[GraderKind, float] = MappingProxyType(
    {GraderKind.OBJECTIVE: 360.0, GraderKind.STRUCTURE: 180.0}
)
"""The reference harness's execution timeouts (§4), also used as CPU limits."""

RULES: Mapping[GraderKind, str] = MappingProxyType(
    {GraderKind.OBJECTIVE: "trex-compat", GraderKind.STRUCTURE: "orgeval-trex-compat"}
)
EXTRACTORS: Mapping[GraderKind, str] = MappingProxyType(
    {GraderKind.OBJECTIVE: "trex-compat-solver", GraderKind.STRUCTURE: "trex-compat-orgeval"}
)

# The reference wrapper executes the program inside a module that has already imported these
# (§4.1), so compat programs may use them without importing.
_WRAPPER_PRELUDE = "import os\nimport sys\nimport json\nimport gurobipy as gp\nfrom gurobipy import GRB\n"


def data_path(benchmark: Benchmark, problem: Problem) -> str:
    """Instance path as the reference ORGEval runner inserts it: ``data/<folder>/<data_path>``,
    relative to its working directory."""
    return f"data/{benchmark.root.name}/{problem.data_path or benchmark.spec.instance_file}"


def lp_name(problem: Problem) -> str:
    """The LP file the ORGEval rewrite makes the program write (upstream's naming)."""
    k = problem.id.rsplit("_", 1)[-1]
    return f"{k}_model_data_{k}_problem{k}.lp"


class TrexCompatProtocol(Protocol):
    name = "trex-compat"
    description = "reproduce the published SLAI T-Rex harness (extractors, rewrites, rules, limits)"
    # The trex-compat rule finds only gurobipy models, so the reference answers in gurobipy.
    reference_options = MappingProxyType({"libraries": "gurobipy"})

    def extractor(self, grader: GraderSpec) -> str:
        return grader.compat_extractor or EXTRACTORS[grader.kind]

    def rule(self, grader: GraderSpec) -> str:
        return grader.compat_rule or RULES[grader.kind]

    def limits(self, kind: GraderKind) -> SandboxLimits:
        return SandboxLimits(wall_s=WALL_S[kind], cpu_s=WALL_S[kind])

    def job(self, benchmark: Benchmark, problem: Problem, code: str) -> Job:
        instance = problem.instance_files.get(benchmark.spec.instance_file)
        if benchmark.spec.grader.kind is GraderKind.OBJECTIVE:
            # Upstream writes the instance (or {"question": ...} for NL4OPT/OptiBench) to
            # <tmp>/data.json and rewrites the literal "data.json" to that absolute path.
            files = {
                "data.json": instance if instance is not None else json.dumps({"question": problem.question})
            }
            rewritten = solver_rewrite(code, data_json_path=f"{WORKDIR_TOKEN}/data.json")
            return Job(code=_WRAPPER_PRELUDE + rewritten, files=files, expect="any")
        path = data_path(benchmark, problem)
        rewritten = orgeval_rewrite(code, data_path=path, lp_path=lp_name(problem))
        return Job(code=rewritten, files={path: instance or ""}, expect="any")

    def prompt_working_directory(self, benchmark: Benchmark) -> str | None:
        # Byte-exact upstream prompts: the reference harness writes the absolute data folder here.
        return str(benchmark.root)

    def structure_source(self, problem: Problem, execution: Execution) -> ModelSource | str:
        wanted = lp_name(problem)
        written = next((f for f in execution.written_files if f.name == wanted), None)
        if written is None:
            return "the program did not write the LP file"
        return ModelSource(written.name, text=written.content)

    def summary_row(
        self, benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
    ) -> SummaryRow:
        return summary_row(benchmark, problems, selected=selected)


PROTOCOL = TrexCompatProtocol()
