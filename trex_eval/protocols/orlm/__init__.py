"""The ``orlm`` protocol: the ORLM harness (Cardinal-Operations/ORLM@38712c9 eval/execute.py),
reproduced for objective benchmarks. Each deviation from the ``default`` protocol, with the part
of that file it reproduces:

* extraction -- ``orlm-first-python`` (:mod:`.extract`): the *first* ```` ```python ```` block,
  sliced as ``main`` slices it, where the default takes the last complete block after the
  reasoning; no ```` ```python ```` fence is "No code".
* the job -- the program followed by ORLM's ``ADD_SCRIPT`` (:data:`ADD_SCRIPT`, verbatim), run as
  one script, as ``main`` does (``script += ADD_SCRIPT``): a model not bound to the module-level
  name ``model``, or ``COPT`` not imported (every gurobipy program that does not also import it),
  fails there with a ``NameError``, as upstream. The program is not required to solve anything
  (``expect="any"``): an unsolved ``model`` prints ``No Best Solution``.
* the rule -- ``orlm-compat`` (:mod:`.objective`): ``model``'s answer at COPT's OPTIMAL, else
  ``No Best Solution``; both rounded to integers and ``|Δ| ≤ 0.05·|ref|`` (``main``,
  ``--numerical_err_tolerance``); a ``No Best Solution`` label matched only by ``No Best
  Solution``. The answer is read from the sandbox's record of ``model``, not from the printed
  line; the number rounded and compared is the harness's re-solve of ``model``'s captured model,
  which the answer must agree with, so a passing claim is ``correct`` only when the harness
  verified the solve (``unverified`` otherwise; ``--rule orlm-compat:unverified=true`` counts
  those as ORLM does, on the answer) --
  the deliberate differences :mod:`.objective` lists, as the ``trex-compat`` protocol reads its
  model from the sandbox's record rather than stdout.
* limits -- 300 s wall and CPU: ``compile_script``'s default ``timeout=300`` (the scripts' ``--timeout
  600`` never reaches it: ``process_example`` calls ``compile_script`` without it). ORLM sets
  no CPU or memory limit; the sandbox's memory and output limits are the default's.

Kept from the default, for want of an ORLM counterpart: the instance files of benchmarks that
have them (ORLM's have none) in the working directory; structure benchmarks (ORLM grades none),
graded exactly as the default protocol grades them; the summary row. Not reproduced: ORLM's
prompt (``TEMPLATE_q2mc_en`` of eval/generate.py, asking for coptpy code) -- choose the prompt
set separately -- and the ``reference`` backend has no coptpy answer program, so ``--model
reference`` scores 0 under this protocol (its gurobipy answers fail at ``COPT``, as upstream).
Scores under it carry the protocol's name in the manifest and every table, and the rule's spec
(``orlm-compat@2``) in every grade.
"""

from __future__ import annotations

from collections.abc import Sequence

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow
from trex_eval.protocols.default import PROTOCOL as DEFAULT
from trex_eval.records import Execution, GraderKind, Problem, SampleRecord
from trex_eval.sandbox import Job, SandboxLimits

ADD_SCRIPT = (
    "\nif model.status == COPT.OPTIMAL:\n"
    '    print(f"Just print the best solution: {model.objval}")\n'
    "else:\n"
    '    print("No Best Solution")'
)
"""ORLM's ``ADD_SCRIPT`` (eval/execute.py), byte for byte, appended to every program."""

WALL_S = 300.0
"""ORLM's execution timeout (``compile_script(script_content, timeout=300)``)."""

RULE = "orlm-compat"
EXTRACTOR = "orlm-first-python"


class OrlmProtocol(Protocol):
    name = "orlm"
    description = (
        "reproduce ORLM's harness (first ```python block, ADD_SCRIPT appended, `model` read, round + 5 %)"
    )

    def extractor(self, grader: GraderSpec) -> str:
        return EXTRACTOR if grader.kind is GraderKind.OBJECTIVE else DEFAULT.extractor(grader)

    def rule(self, grader: GraderSpec) -> str:
        return RULE if grader.kind is GraderKind.OBJECTIVE else DEFAULT.rule(grader)

    def limits(self, kind: GraderKind) -> SandboxLimits:
        if kind is GraderKind.OBJECTIVE:
            return SandboxLimits(wall_s=WALL_S, cpu_s=WALL_S)
        return DEFAULT.limits(kind)

    def job(self, benchmark: Benchmark, problem: Problem, code: str) -> Job:
        if benchmark.spec.grader.kind is not GraderKind.OBJECTIVE:
            return DEFAULT.job(benchmark, problem, code)
        return Job(
            code=code + ADD_SCRIPT,
            files=dict(problem.instance_files),
            links=problem.instance_links,
            expect="any",
        )

    def structure_source(self, problem: Problem, execution: Execution) -> ModelSource | str:
        return DEFAULT.structure_source(problem, execution)

    def summary_row(
        self, benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
    ) -> SummaryRow:
        return DEFAULT.summary_row(benchmark, problems, selected=selected)


PROTOCOL = OrlmProtocol()
