"""How well the diagnosis names a known mistake: a mutation corpus from B4O-Feasible reference
programs, run, graded and diagnosed exactly as a run does, and the confusion matrix.

Each benchmark row's reference program (``reference_code``, gurobipy; the program ``trex-eval
audit`` runs, as ``scripts/bench_grading.py`` gets it) is first run as written; a row whose program
does not grade ``correct`` is left out. Then each single known edit of the program text below
(where it applies) is run in the real sandbox (:class:`trex_eval.sandbox.SandboxPool`), judged by
the benchmark's plan (``plan_for(bench).judge``: the harness's own verification) and diagnosed
(``EvaluationPlan.diagnosed``, the default budget). The mutation names the category expected:

==================  ==========================================================  =====================
mutation            edit of the program text                                    expected
==================  ==========================================================  =====================
sense               ``GRB.MAXIMIZE`` <-> ``GRB.MINIMIZE``                         sense_flipped
to_continuous       ``GRB.INTEGER`` -> ``GRB.CONTINUOUS``                         integrality_missing
to_integer          ``GRB.CONTINUOUS`` -> ``GRB.INTEGER``                         integrality_extra
free_vars           ``lb=-GRB.INFINITY`` on every ``addVar(s)`` (``lb=0`` replaced)  bounds_missing (see
                                                                                  free_subset)
free_subset         ``lb=-GRB.INFINITY`` on a random subset of the ``addVar(s)``   unbounded_model /
                    calls (seeded by the row id), and ``print(<m>.ObjVal)`` after  infeasible_model by
                    the last solve where the program reads no objective; kept      the captured solve's
                    only where the program never reads a solve status: it raises   status when the
                    when the solve has no optimum                                  program raised after
                                                                                  it, else bounds_missing
extra_constraint    an objective cut ``obj >= ref + d`` (``<=`` ``ref - d`` when      constraint_extra
                    maximising), named ``diag_extra``, before the solve
drop_constraint     one single-line ``addConstr`` statement replaced by ``pass``      unbounded_model when
                    (named against the model the reference program builds, as a  the solve is
                    run does for a sample the single edits leave unexplained)     unbounded, else
                                                                                  constraint_missing
scale               the objective times 100                                       objective_scaled
rounding            the objective plus 0.45 (integral labels only)                rounding
near_miss           the objective times 1.0005 (labels that do not round to it)   near_miss
data_key            the first ``['key']`` lookup asks for ``'key_missing'``        data_access
api_attr            ``.optimize()`` -> ``.optimise()``                            api_misuse
truncate            the completion cut at 60 % with ``finish_reason="length"``     truncated
==================  ==========================================================  =====================

Programs run under 20 s of wall and CPU time. A mutant that still grades ``correct`` (e.g.
integrality flipped on an LP whose optimum is integral anyway) is counted as "still correct" and
left out of the matrix, as is one whose grade is not the program's (``unverified``, environment
failures), or that ran out of time or memory (the edit made it too slow to show its mistake), or
whose program caught the exception its edit raises (``data_key``, ``api_attr``: a ``try``/``except``
around the whole model, as ORThought's programs have, makes it end without a solve instead).
Prints the confusion matrix
(expected rows, diagnosed columns), precision and recall per category, and the time the
diagnoses took against the time the same samples took to execute and judge.

    python scripts/diagnosis_confusion.py [--limit 40] [--workers 2] [--benchmark b4o-feasible]
        [--held-out [--tuning-rows 40]]

The diagnosis was tuned on the first :data:`TUNING_ROWS` rows of B4O-Feasible. ``--held-out``
builds the corpus from ``--limit`` rows after the first ``--tuning-rows`` instead, leaving out any
row whose reference program is a tuning row's (B4O's twins: the full and concise wordings of one
instance share their program): mutants of programs the tuning never saw. Another benchmark with
reference programs (``--benchmark industryor@orthought``, ORThought's gurobipy programs) is
held out as a whole.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.data import resolve_data_dir
from trex_eval.grading.diagnosis import DiagnosisBudget
from trex_eval.grading.diagnosis.values import label_decimals
from trex_eval.protocols.plan import EvaluationPlan, plan_for
from trex_eval.protocols.reference_programs import ReferencePrograms
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    Problem,
    SolveStatus,
    StructureReference,
    Verdict,
)
from trex_eval.sandbox import SandboxLimits, SandboxPool

TUNING_ROWS = 40
"""Rows of B4O-Feasible (with a reference program) the diagnosis was tuned on: the first 40."""
LIMITS = SandboxLimits(wall_s=20.0, cpu_s=20.0)
"""Shorter than a run's 60 s: a mutant that loses its way (a free variable in a MILP) stops sooner."""
_RAISING = frozenset({"data_key", "api_attr"})
"""Mutations whose category is decided by the exception they raise."""
_OPTIMIZE = re.compile(r"^(\s*)(\w+)\.optimize\(\)\s*$", re.M)
_READS_OBJECTIVE = re.compile(r"\.(?:ObjVal|objVal|getObjective\(\)\.getValue\(\))")
_READS_STATUS = re.compile(r"\.(?:Status|status|SolCount)\b|GRB\.(?:OPTIMAL|Status|INFEASIBLE|UNBOUNDED)")
_LIMITS_EXPECTED = frozenset({"drop_constraint", "truncate"})
"""Mutations whose samples stay in the matrix when they run out of time or memory, as they did
before ``free_subset`` came: the other mutations' expected category needs the mistake reached."""
_FREED = frozenset({"free_vars", "free_subset"})
"""Mutations that free variables: named by the solve's status when the program raised after it."""
_KEY = re.compile(r"\[(['\"])(\w+)\1\]")


@dataclass(frozen=True)
class Mutant:
    """One mutated sample: the completion to grade and the category its mutation expects
    (``None``: decided from the execution, see :func:`_expected`)."""

    problem: Problem
    mutation: str
    completion: Completion
    expected: str | None


def _fenced(problem: Problem, code: str, *, finish_reason: str = "stop") -> Completion:
    return Completion(
        problem_id=problem.id, sample_index=0, text=f"```python\n{code}\n```\n", finish_reason=finish_reason
    )


def _before_solve(code: str, lines: Callable[[str], list[str]]) -> str | None:
    """``code`` with ``lines(model name)`` inserted before its last ``<name>.optimize()``."""
    found = list(_OPTIMIZE.finditer(code))
    if not found:
        return None
    last = found[-1]
    indent, name = last.group(1), last.group(2)
    inserted = "".join(f"{indent}{line}\n" for line in lines(name))
    return code[: last.start()] + inserted + code[last.start() :]


def _objective(factor: str) -> Callable[[str], list[str]]:
    return lambda m: [
        f"{m}.update()",
        f"{m}.setObjective({factor.format(o=f'{m}.getObjective()')}, {m}.ModelSense)",
    ]


def _call_end(code: str, start: int) -> int | None:
    """Index of the parenthesis closing the one at ``start`` (strings are not parsed: good enough
    for the reference programs)."""
    depth = 0
    for index in range(start, len(code)):
        depth += {"(": 1, ")": -1}.get(code[index], 0)
        if depth == 0:
            return index
    return None


def _free_vars(code: str, *, chosen: Callable[[int], bool] = lambda _: True) -> str | None:
    """``code`` with ``lb=-GRB.INFINITY`` on each ``addVar(s)`` call whose number (0, 1, ... in
    text order) is ``chosen`` (default: every call); ``None`` where nothing changed."""
    if "GRB" not in code:
        return None
    out, position, changed = [], 0, False
    calls = (match for match in re.finditer(r"\.addVars?\(", code))
    for number, match in enumerate(calls):
        end = _call_end(code, match.end() - 1)
        if end is None or match.start() < position or not chosen(number):
            continue
        call = code[match.start() : end]
        if re.search(r"\blb\s*=", call):
            new = re.sub(r"\blb\s*=\s*0(\.0)?\b", "lb=-GRB.INFINITY", call)
        else:
            new = call + (", " if call.rstrip()[-1] != "(" else "") + "lb=-GRB.INFINITY"
        changed |= new != call
        out += [code[position : match.start()], new]
        position = end
    return "".join([*out, code[position:]]) if changed else None


def _free_subset(code: str, seed: str) -> str | None:
    """A random non-empty subset (seeded by ``seed``) of the ``addVar(s)`` calls freed, in a
    program that reads the objective after its last solve without reading a status (the read
    added where the program has none); ``None`` where the program reads a status."""
    if _READS_STATUS.search(code):
        return None
    count = len(re.findall(r"\.addVars?\(", code))
    if not count:
        return None
    rng = random.Random(seed)
    subset = set(rng.sample(range(count), rng.randint(1, count)))
    freed = _free_vars(code, chosen=subset.__contains__)
    if freed is None or _READS_OBJECTIVE.search(freed):
        return freed
    found = list(_OPTIMIZE.finditer(freed))
    if not found:
        return None
    last = found[-1]
    read = f"{last.group(1)}print('objective', {last.group(2)}.ObjVal)\n"
    return freed[: last.end()] + "\n" + read + freed[last.end() :].lstrip("\n")


def _drop_constraint(code: str) -> str | None:
    for match in re.finditer(r"^(\s*)\w+\.addConstr\(.*\)\s*$", code, re.M):
        line = match.group(0)
        if line.count("(") == line.count(")"):
            return code[: match.start()] + f"{match.group(1)}pass" + code[match.end() :]
    return None


def _extra_constraint(reference: float) -> Callable[[str], list[str]]:
    gap = max(1.0, 0.05 * abs(reference))
    return lambda m: [
        f"{m}.update()",
        f"_o = {m}.getObjective()",
        f"{m}.addConstr(_o >= {reference + gap!r}, name='diag_extra') if {m}.ModelSense == 1 "
        f"else {m}.addConstr(_o <= {reference - gap!r}, name='diag_extra')",
    ]


def mutants(problem: Problem, code: str) -> list[Mutant]:
    """Every mutation of the table that applies to ``code`` (a text edit that changes it)."""
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
    ref = problem.reference.value
    edits: dict[str, tuple[str | None, str | None]] = {
        "sense": (
            code.replace("GRB.MAXIMIZE", "@@MIN@@")
            .replace("GRB.MINIMIZE", "GRB.MAXIMIZE")
            .replace("@@MIN@@", "GRB.MINIMIZE"),
            "sense_flipped",
        ),
        "to_continuous": (code.replace("GRB.INTEGER", "GRB.CONTINUOUS"), "integrality_missing"),
        "to_integer": (code.replace("GRB.CONTINUOUS", "GRB.INTEGER"), "integrality_extra"),
        "free_vars": (_free_vars(code), "bounds_missing"),
        "free_subset": (_free_subset(code, problem.id), None),
        "extra_constraint": (_before_solve(code, _extra_constraint(ref)), "constraint_extra"),
        "drop_constraint": (_drop_constraint(code), None),
        "scale": (_before_solve(code, _objective("100 * {o}")), "objective_scaled"),
        "data_key": (
            _KEY.sub(lambda k: f"[{k.group(1)}{k.group(2)}_missing{k.group(1)}]", code, count=1),
            "data_access",
        ),
        "api_attr": (code.replace(".optimize()", ".optimise()"), "api_misuse"),
    }
    decimals = label_decimals(problem.reference.label)
    if decimals == 0:
        edits["rounding"] = (_before_solve(code, _objective("{o} + 0.45")), "rounding")
    elif decimals is None or decimals > 6 or abs(ref) * 5e-4 > 10.0**-decimals:
        edits["near_miss"] = (_before_solve(code, _objective("{o} * 1.0005")), "near_miss")
    found = [
        Mutant(problem, name, _fenced(problem, text), expected)
        for name, (text, expected) in edits.items()
        if text is not None and text != code
    ]
    cut = code[: int(len(code) * 0.6)]
    text = f"```python\n{cut}"  # the fence never closes: the token limit cut it
    found.append(
        Mutant(
            problem,
            "truncate",
            Completion(problem_id=problem.id, sample_index=0, text=text, finish_reason="length"),
            "truncated",
        )
    )
    return found


def _expected(mutant: Mutant, execution: Execution) -> str:
    """The category a mutant's mutation expects; a dropped constraint is ``unbounded_model`` when
    the solve ended unbounded, else ``constraint_missing`` (named against the reference program's
    model); freed variables are named by the captured solve's status when the program raised
    after a solve without an optimum (freeing can only make a feasible model unbounded:
    ``inf_or_unbd`` is ``unbounded_model``), else ``bounds_missing``."""
    last = execution.last_solve
    unbounded = last is not None and last.status in (SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD)
    if mutant.mutation in _FREED and execution.error_type is not None and last is not None:
        if last.status is SolveStatus.INFEASIBLE:
            return "infeasible_model"
        if unbounded:
            return "unbounded_model"
    if mutant.expected is not None:
        return mutant.expected
    if mutant.mutation == "free_subset":
        return "bounds_missing"
    return "unbounded_model" if unbounded else "constraint_missing"


def graded(
    pool: SandboxPool, plan: EvaluationPlan, problem: Problem, completion: Completion
) -> tuple[Execution, Grade, float]:
    """The sample as a run executes and judges it, and the seconds that took."""
    started = time.perf_counter()
    program = plan.extract(completion)
    if program.code is None:
        execution = Execution(status=ExecStatus.NO_CODE, detail=program.reason)
        grade = plan.grade(problem, execution, reference_model=_no_structure)
    else:
        execution = pool.run(plan.job(problem, program), limits=LIMITS)
        execution, grade = plan.judge(problem, execution, reference_model=_no_structure)
    return execution, grade, time.perf_counter() - started


def _no_structure(_: StructureReference) -> LinearModel:
    raise AssertionError("objective benchmarks only")


def _report(rows: list[tuple[str, str]], excluded: Counter[str], timing: tuple[float, float, float]) -> None:
    labels = sorted({e for e, _ in rows} | {p for _, p in rows})
    width = max(len(label) for label in labels) + 1
    confusion = Counter(rows)
    print(f"\nconfusion matrix ({len(rows)} mutants; rows expected, columns diagnosed, numbered as the rows)")
    print(" " * (width + 3) + " ".join(f"{n:>4}" for n in range(1, len(labels) + 1)))
    for number, expected in enumerate(labels, 1):
        cells = " ".join(f"{confusion[(expected, p)] or '.':>4}" for p in labels)
        print(f"{number:>2} {expected:<{width}}{cells}")
    print(f"\n{'category':<{width}} {'support':>7} {'precision':>9} {'recall':>7}")
    for label in labels:
        hit = confusion[(label, label)]
        predicted = sum(n for (_, p), n in confusion.items() if p == label)
        support = sum(n for (e, _), n in confusion.items() if e == label)
        precision = f"{hit / predicted:.1%}" if predicted else "-"
        recall = f"{hit / support:.1%}" if support else "-"
        print(f"{label:<{width}} {support:>7} {precision:>9} {recall:>7}")
    print("\nleft out:", ", ".join(f"{k} {v}" for k, v in sorted(excluded.items())) or "none")
    judged, diagnosed, worst = timing
    print(
        f"time: execute + judge {judged:.1f} s, diagnose {diagnosed:.1f} s "
        f"(ratio {diagnosed / judged:.2f}; worst sample {worst:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="reference programs to mutate (first N rows)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--benchmark", default="b4o-feasible")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="mutate --limit rows after the tuning rows, none sharing a tuning row's program",
    )
    parser.add_argument("--tuning-rows", type=int, default=TUNING_ROWS, help="rows --held-out skips")
    parser.add_argument("--show", action="store_true", help="print every mutant that was misdiagnosed")
    parser.add_argument(
        "--budget-s", type=float, default=None, help="seconds per sample (default: the run's)"
    )
    args = parser.parse_args()
    bench = load_benchmark(args.benchmark, data_dir=resolve_data_dir(None))
    plan = plan_for(bench)
    problems = corpus_rows(bench.problems, args.limit, held_out=args.held_out, tuning_rows=args.tuning_rows)
    rows: list[tuple[str, str]] = []
    excluded: Counter[str] = Counter()
    judged = diagnosed = worst = 0.0
    budget = DiagnosisBudget() if args.budget_s is None else DiagnosisBudget(time_s=args.budget_s)
    with SandboxPool(workers=args.workers) as pool, ThreadPoolExecutor(args.workers) as lanes:
        originals = list(lanes.map(lambda p: (p, _fenced(p, _code_of(plan, p))), problems))
        checked = list(lanes.map(lambda item: graded(pool, plan, item[0], item[1]), originals))
        corpus = [
            mutant
            for (problem, completion), (_, grade, _) in zip(originals, checked, strict=True)
            if grade.verdict is Verdict.CORRECT or excluded.update(["reference not correct"])
            for mutant in mutants(problem, _code_of(plan, problem))
        ]
        print(f"{len(problems)} reference programs, {len(corpus)} mutants")
        results = list(lanes.map(lambda m: graded(pool, plan, m.problem, m.completion), corpus))
        rows, (judged, diagnosed, worst), judged_failing = asyncio.run(
            _diagnosed(pool, plan, corpus, results, budget, excluded, show=args.show)
        )
    _report(rows, excluded, (judged, diagnosed, worst))
    # A run where half the samples fail: per failing sample, its grading and its diagnosis; per
    # passing one (the reference programs themselves), its grading only.
    passing = sum(seconds for _, _, seconds in checked) / max(1, len(checked))
    failing = len(rows)
    print(
        f"budget {budget.time_s:g} s; a run where half the samples fail: diagnosis adds "
        f"{diagnosed / max(1e-9, judged_failing + passing * failing):.0%} to its grading time "
        f"({failing} failing samples diagnosed in {diagnosed:.1f} s, reference programs run "
        "for the structural comparison included)"
    )


async def _diagnosed(
    pool: SandboxPool,
    plan: EvaluationPlan,
    corpus: list[Mutant],
    results: list[tuple[Execution, Grade, float]],
    budget: DiagnosisBudget,
    excluded: Counter[str],
    *,
    show: bool,
) -> tuple[list[tuple[str, str]], tuple[float, float, float], float]:
    """Each failing mutant diagnosed as a run diagnoses it: the value search, then, where that
    leaves it unexplained, the reference program's model (run once per problem in the pool)."""
    references = ReferencePrograms()
    rows: list[tuple[str, str]] = []
    judged = diagnosed = worst = 0.0
    judged_failing = 0.0
    for mutant, (execution, grade, seconds) in zip(corpus, results, strict=True):
        judged += seconds
        if grade.verdict is Verdict.CORRECT:
            excluded[f"still correct ({mutant.mutation})"] += 1
            continue
        if (
            grade.verdict in (Verdict.TIMEOUT, Verdict.MEMORY_LIMIT)
            and mutant.mutation not in _LIMITS_EXPECTED
        ):
            # The mutant never reached the mistake it was made for (the edit made it too slow).
            excluded[f"{grade.verdict.value} ({mutant.mutation})"] += 1
            continue
        if mutant.mutation in _RAISING and execution.error_type is None:
            excluded[f"exception caught ({mutant.mutation})"] += 1
            continue
        if grade.verdict is Verdict.UNVERIFIED or grade.verdict.is_environment_failure:
            excluded[f"{grade.verdict.value} ({mutant.mutation})"] += 1
            continue
        started = time.perf_counter()
        done = plan.diagnosed(mutant.problem, mutant.completion, execution, grade, budget=budget)
        done = await references.refined(
            done, mutant.problem, execution, run=lambda p, code: pool.arun(plan.job(p, code), limits=LIMITS)
        )
        spent = time.perf_counter() - started
        diagnosed, worst = diagnosed + spent, max(worst, spent)
        judged_failing += seconds
        predicted = done.diagnosis.category.value if done.diagnosis else "none"
        expected = _expected(mutant, execution)
        rows.append((expected, predicted))
        if show and expected != predicted:
            detail = done.diagnosis.detail if done.diagnosis else ""
            print(f"  {mutant.problem.id} {mutant.mutation}: expected {expected}, got {predicted}")
            print(f"    diagnosis: {detail}; grade: {grade.reason[:160]}")
    return rows, (judged, diagnosed, worst), judged_failing


def corpus_rows(
    problems: Sequence[Problem], limit: int, *, held_out: bool, tuning_rows: int = TUNING_ROWS
) -> list[Problem]:
    """The rows to mutate: the first ``limit`` with a reference program, or with ``held_out``
    the first ``limit`` after the first ``tuning_rows`` whose reference program no tuning row has."""
    with_code = [p for p in problems if p.reference_code is not None]
    if not held_out:
        return with_code[:limit]
    seen = {p.reference_code for p in with_code[:tuning_rows]}
    return [p for p in with_code[tuning_rows:] if p.reference_code not in seen][:limit]


def _code_of(plan: EvaluationPlan, problem: Problem) -> str:
    text = reference_completion_text(problem)
    program = plan.extract(Completion(problem_id=problem.id, sample_index=0, text=text, finish_reason="stop"))
    assert program.code is not None, problem.id
    return program.code


if __name__ == "__main__":
    main()
