"""Grading speed on real programs: the reference harness's execution path vs ``trex-eval audit``.

Grades the same B4O-Feasible reference programs (each benchmark row's ``reference_code`` with
``model.optimize()`` appended, exactly what ``trex-eval audit`` runs) two ways, alternating, in one
process run on the same machine and the same number of lanes:

(a) the reference harness's solver path (../shared/docs/reference-harness.md §4.1, re-implemented
    here): per program a fresh ``tempfile.mkdtemp()`` holding the instance files and the wrapper
    as ``model_code.py`` (``GRB_LICENSE_FILE`` passthrough, ``import gurobipy``, ``exec`` of the
    user code at module level, model discovery under ``model``/``m`` with ``optimize`` and
    ``ObjVal``, ``OutputFlag`` 0, the status JSON), run by ``subprocess.run([sys.executable,
    model_code.py], capture_output=True, text=True, timeout=360, cwd=tmp)``; the parent parses
    stdout (all of it, else from the last ``{"status":``) and scores ``|pred - gt| <= 1e-6``.
    No sandbox, no verification. ``--lanes`` programs at a time.
(b) ``trex-eval audit BENCHMARK --workers LANES --out DIR`` as a subprocess: CLI start-up, data
    loading, pool start, sandboxed execution, verification and grading included.
(c) the bare fork ceiling: ``LANES`` warm fork servers (gurobipy imported and its default
    environment started once, ``Threads=1`` as the sandbox sets it); per program the parent writes
    the instance files to a fresh directory and forks a child that runs the program there and
    exits. No sandbox, no hooks, no records, no verification, no grading, start-up not timed: what
    any harness that forks a fresh process per program can at best reach on this machine, so
    ``a / c`` bounds every harness's speed-up over (a), and ``c / b`` is the share of that ceiling
    trex-eval reaches.
(d) the verified ceiling: (c), and after each program, on its lane, the harness's own re-solve of
    the model that program's last solve captured in the round's audit (what the verification
    contract costs at least: ``verify_solve``, its memo of identical models cleared each round,
    the store of re-solve results off; LP claims the certificate proves are not re-solved).

Both audits keep the start facts (``TREX_START_FACTS``: the licence pre-flight's answer and the
sandbox's site-packages view, which the filling audit leaves), as every command after a user's
first of the day does; (b) has the store of re-solve results off, (b') reads the one the
filling audit wrote.

Before the first round the checkout's bytecode is written (``compileall`` of ``trex_eval``, as
``pip install`` does for an installed package): under ``PYTHONDONTWRITEBYTECODE`` an editable
checkout without it compiles ~140 modules from source in every audit (about 0.6 CPU s here),
which the reference path, importing gurobipy's compiled wheel, never pays.

Prints every round's times, the medians, their ratios (a / b, a / c, c / b), the scores, and from the audit's
run directory the share of ``correct`` verdicts backed by a harness re-solve ("match") and the
share of all passing claims (correct + unverified) that were verified, with what stayed
unverified and why.

    python scripts/bench_grading.py [--rounds 3] [--lanes 2] [--benchmark b4o-feasible]
        [--no-ceiling]
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cgroup_cpu import tree_cpu

from trex_eval import verify
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.data import resolve_data_dir
from trex_eval.extract import extract
from trex_eval.records import Completion, Execution, ObjectiveReference, Problem, SolveRecord

TIMEOUT_S = 360


@dataclass(frozen=True)
class Cost:
    """One path's cost in one round: ``wall`` seconds and ``cpu`` seconds (user + system) of its
    whole process tree, None where no cgroup could be made (not root, no cgroup v1 cpuacct)."""

    wall: float
    cpu: float | None


TOLERANCE = 1e-6

# The §4.1 wrapper: the user code runs at module level inside one try; the model must be bound to
# `model` or `m` and already optimised (hasattr ObjVal); statuses as the reference maps them.
WRAPPER = """import json, os, sys
try:
    os.environ['GRB_LICENSE_FILE'] = os.environ.get('GRB_LICENSE_FILE', '')
    import gurobipy as gp
    from gurobipy import GRB
    exec({code!r}, globals(), locals())
    found = None
    for name in ['model', 'm']:
        candidate = locals().get(name, globals().get(name))
        if candidate is not None and hasattr(candidate, 'optimize') and hasattr(candidate, 'ObjVal'):
            found = candidate
            break
    if found is None:
        print(json.dumps({{"status": -1, "status_name": "MODEL_NOT_FOUND"}}))
    else:
        found.setParam("OutputFlag", 0)
        if found.status == 1:
            found.optimize()
        if found.status == 2:
            print(json.dumps({{"status": 2, "optimal_value": found.ObjVal, "status_name": "OPTIMAL"}}))
        elif found.status in (3, 4, 5):
            name = {{3: "INFEASIBLE", 4: "INF_OR_UNBD", 5: "UNBOUNDED"}}[found.status]
            print(json.dumps({{"status": found.status, "optimal_value": None, "status_name": name}}))
        else:
            print(json.dumps({{"status": found.status, "optimal_value": None, "status_name": "UNKNOWN"}}))
except Exception as e:
    print(json.dumps({{"status": -1, "status_name": f"ERROR: {{e}}"}}))
    sys.exit(1)
"""


def _programs(benchmark: str, data_dir: Path) -> list[tuple[Problem, str]]:
    """Each problem with the program the audit runs for it (the reference backend's completion,
    through the same extractor)."""
    bench = load_benchmark(benchmark, data_dir=data_dir)
    found = []
    for problem in bench.problems:
        text = reference_completion_text(problem)
        program = extract(Completion(problem_id=problem.id, sample_index=0, text=text), extractor="default")
        assert program.code is not None, problem.id
        found.append((problem, program.code))
    return found


def _parse(stdout: str) -> float | None:
    """The reference parent's parsing: all of stdout as JSON, else from the last ``{"status":``."""
    text = stdout.strip()
    if not text:
        return None
    try:
        result = json.loads(text)
    except ValueError:
        try:
            result = json.loads(text[text.rfind('{"status":') :])
        except ValueError:
            return None
    if result.get("status") == 2 and result.get("optimal_value") is not None:
        return float(result["optimal_value"])
    return None


def _reference_one(problem: Problem, code: str) -> bool:
    workdir = tempfile.mkdtemp()
    try:
        for name, content in problem.instance_files.items():
            target = Path(workdir, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        script = Path(workdir, "model_code.py")
        script.write_text(WRAPPER.format(code=code), encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=workdir
            )
        except subprocess.TimeoutExpired:
            return False
        predicted = _parse(done.stdout)
        reference = problem.reference
        assert isinstance(reference, ObjectiveReference) and reference.value is not None
        return predicted is not None and abs(predicted - reference.value) <= TOLERANCE
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def reference_path(programs: list[tuple[Problem, str]], lanes: int) -> tuple[Cost, int]:
    """(cost, programs scored correct) for the §4.1 path over ``programs``: this process's
    threads and every program's interpreter are counted."""
    with tree_cpu("reference") as cpu:
        started = time.perf_counter()
        with ThreadPoolExecutor(lanes) as pool:
            passed = sum(pool.map(lambda item: _reference_one(*item), programs))
        wall = time.perf_counter() - started
    return Cost(wall, cpu.seconds), passed


# A lane of the ceiling (c): one JSON job a line on stdin ({"files": ..., "code": ...}), one line
# back when the forked child that ran it has exited. The child's output goes to /dev/null.
CEILING_SERVER = """import json, os, shutil, sys, tempfile
replies = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # what the libraries print (gurobipy's licence banner) is not a reply
import gurobipy
gurobipy.setParam("OutputFlag", 0)
gurobipy.setParam("Threads", 1)
gurobipy.Model().dispose()
for line in sys.stdin:
    job = json.loads(line)
    workdir = tempfile.mkdtemp()
    for name, content in job["files"].items():
        target = os.path.join(workdir, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(content)
    code = compile(job["code"], "program.py", "exec")
    pid = os.fork()
    if pid == 0:
        os.chdir(workdir)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            exec(code, {"__name__": "__main__"})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    shutil.rmtree(workdir, ignore_errors=True)
    replies.write("done\\n")
    replies.flush()
"""


def ceiling_path(
    programs: list[tuple[Problem, str]],
    lanes: int,
    *,
    claims: dict[str, tuple[SolveRecord, float]] | None = None,
) -> Cost:
    """Cost of the bare fork ceiling (c) over ``programs`` (servers started and warmed, neither
    timed nor counted; then the servers, their forked children and this process's re-solves are);
    with ``claims`` (problem id -> the last solve an audit captured), the verified ceiling (d)."""
    verify._MEMO.clear()
    servers = [
        subprocess.Popen(
            [sys.executable, "-c", CEILING_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(lanes)
    ]
    try:

        def send(server: subprocess.Popen[str], files: dict[str, str], code: str) -> None:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps({"files": files, "code": code}) + "\n")
            server.stdin.flush()
            if server.stdout.readline() != "done\n":
                raise SystemExit("a ceiling server failed")

        for server in servers:
            send(server, {}, "pass")
        waiting: queue.SimpleQueue[tuple[Problem, str]] = queue.SimpleQueue()
        for item in programs:
            waiting.put(item)

        def lane(server: subprocess.Popen[str]) -> None:
            while True:
                try:
                    problem, code = waiting.get_nowait()
                except queue.Empty:
                    return
                send(server, dict(problem.instance_files), code)
                claim = (claims or {}).get(problem.id)
                if claim is not None:
                    solve, limit = claim
                    verify.verify_solve(solve.model_copy(update={"verification": None}), budget_s=limit)

        with tree_cpu("ceiling", pids=[server.pid for server in servers]) as cpu:
            started = time.perf_counter()
            with ThreadPoolExecutor(lanes) as pool:
                list(pool.map(lane, servers))
            wall = time.perf_counter() - started
        return Cost(wall, cpu.seconds)
    finally:
        for server in servers:
            if server.stdin is not None:
                server.stdin.close()
            server.wait(timeout=60)


def audit_path(benchmark: str, lanes: int, out: Path, *, store: Path | None) -> tuple[Cost, int]:
    """(cost, correct verdicts) for ``trex-eval audit`` as a fresh command, its whole process
    tree counted; ``store``: the folder of stored re-solve results it may use (None: off)."""
    command = [
        sys.executable, "-m", "trex_eval", "audit", benchmark,
        "--workers", str(lanes), "--out", str(out), "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "TREX_RESOLVE_STORE": str(store) if store is not None else "off"}
    with tree_cpu("audit") as cpu:
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, text=True, env=env)
        elapsed = time.perf_counter() - started
    verdicts = Counter(json.loads(line)["grade"]["verdict"] for line in (out / "samples.jsonl").open())
    with (out / "audit.csv").open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows):
            if row["verdict"] != "correct" and not row["known_issue"]:
                print(
                    f"  audit: {row['id']} {row['verdict']} without a documented data issue: {row['reason']}"
                )
    return Cost(elapsed, cpu.seconds), verdicts["correct"]


def claims(run_dir: Path) -> dict[str, tuple[SolveRecord, float]]:
    """Problem id -> the last solve of its sample in an audit's run directory and the re-solve
    time limit the run gave it, for the passing claims (the re-solves a verified grade needs)."""
    found = {}
    for line in (run_dir / "samples.jsonl").open():
        record = json.loads(line)
        execution = Execution.model_validate(record["execution"])
        last = execution.last_solve
        if record["grade"]["verdict"] in ("correct", "unverified") and last is not None and last.model:
            found[record["problem_id"]] = (last, verify.verification_budget(execution))
    return found


def verified_share(run_dir: Path) -> tuple[int, int, int, Counter[str]]:
    """(correct, correct with a harness match, passing claims = correct + unverified, reasons of
    the unverified) from a run directory's samples."""
    correct = matched = passing = 0
    reasons: Counter[str] = Counter()
    for line in (run_dir / "samples.jsonl").open():
        record = json.loads(line)
        verdict = record["grade"]["verdict"]
        solves = record["execution"]["solves"]
        verification = solves[-1]["verification"] if solves else None
        if verdict == "correct":
            correct += 1
            matched += verification == "match"
        if verdict in ("correct", "unverified"):
            passing += 1
        if verdict == "unverified":
            reasons[f"{record['problem_id']}: {verification or 'no solve record'}"] += 1
    return correct, matched, passing, reasons


PATHS = {
    "reference": "(a) reference harness's path",
    "audit": "(b) trex-eval audit, store off",
    "audit_stored": "(b') trex-eval audit, store warm",
    "bare": "(c) bare fork ceiling",
    "verified": "(d) verified ceiling",
}


def _median(costs: list[Cost]) -> Cost:
    cpus = [cost.cpu for cost in costs if cost.cpu is not None]
    return Cost(
        statistics.median(cost.wall for cost in costs),
        statistics.median(cpus) if len(cpus) == len(costs) else None,
    )


def _shown(cost: Cost) -> str:
    cpu = f"{cost.cpu:6.2f} CPU s" if cost.cpu is not None else "  (no cgroup)"
    return f"{cost.wall:6.2f} s wall, {cpu}"


def _ratios(medians: dict[str, Cost]) -> None:
    """The issue's measures, in wall and in CPU seconds: how much less the audit costs than the
    reference path (a / b), which share of each ceiling it reaches (c / b, d / b), and what the
    store of re-solve results saves (b - b')."""
    for measure, (top, bottom) in {
        "reference path / audit (times less)": ("reference", "audit"),
        "reference path / audit, store warm (a / b')": ("reference", "audit_stored"),
        "share of the bare fork ceiling (c / b)": ("bare", "audit"),
        "share of the bare fork ceiling, store warm (c / b')": ("bare", "audit_stored"),
        "share of the verified ceiling (d / b)": ("verified", "audit"),
        "audit, store off / store warm": ("audit", "audit_stored"),
    }.items():
        if top not in medians or bottom not in medians:
            continue
        a, b = medians[top], medians[bottom]
        cpu = f"{a.cpu / b.cpu:.2f}" if a.cpu and b.cpu else "n/a"
        print(f"  {measure}: wall {a.wall / b.wall:.2f}, CPU {cpu}")
    if "audit" in medians and "audit_stored" in medians:
        cold, warm = medians["audit"].cpu, medians["audit_stored"].cpu
        if cold is not None and warm is not None:
            print(
                f"  CPU saved by the store of re-solve results: {cold - warm:.2f} s ({1 - warm / cold:.0%})"
            )


def _round(
    args: argparse.Namespace, programs: list[tuple[Problem, str]], scratch: Path, index: int
) -> dict[str, Cost]:
    """One round of every path, alternating; prints its line."""
    costs: dict[str, Cost] = {}
    costs["reference"], ref_passed = reference_path(programs, args.lanes)
    run = scratch / f"audit-{index}"
    costs["audit"], audit_passed = audit_path(args.benchmark, args.lanes, run, store=None)
    costs["audit_stored"], _ = audit_path(
        args.benchmark, args.lanes, scratch / f"stored-{index}", store=scratch / "store"
    )
    if not args.no_ceiling:
        costs["bare"] = ceiling_path(programs, args.lanes)
        costs["verified"] = ceiling_path(programs, args.lanes, claims=claims(run))
    print(f"round {index + 1}: reference path {ref_passed} correct, audit {audit_passed} correct")
    for key, cost in costs.items():
        print(f"  {PATHS[key]:34} {_shown(cost)}")
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default="b4o-feasible")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--no-ceiling", action="store_true", help="skip the ceilings (c) and (d)")
    args = parser.parse_args()
    # (d) pays each re-solve itself: the user's store of re-solve results would answer them.
    os.environ["TREX_RESOLVE_STORE"] = "off"
    data_dir = resolve_data_dir(args.data_dir)
    package = Path(verify.__file__).resolve().parents[1]
    compileall.compile_dir(str(package), quiet=2, optimize=0)  # what an installed package has
    programs = _programs(args.benchmark, data_dir)
    print(f"{len(programs)} {args.benchmark} reference programs, {args.lanes} lanes, {os.cpu_count()} CPUs")
    scratch = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        # Fills the store (b') reads, untimed: a repeat audit meets the same models.
        audit_path(args.benchmark, args.lanes, scratch / "filling", store=scratch / "store")
        rounds = [_round(args, programs, scratch, index) for index in range(args.rounds)]
        medians = {key: _median([costs[key] for costs in rounds]) for key in rounds[0]}
        print(f"median of {args.rounds} rounds:")
        for key, cost in medians.items():
            print(f"  {PATHS[key]:34} {_shown(cost)}")
        _ratios(medians)
        correct, matched, passing, reasons = verified_share(scratch / f"audit-{args.rounds - 1}")
        print(
            f"verified: {matched}/{correct} correct verdicts backed by a harness re-solve; "
            f"{matched}/{passing} passing claims verified ({matched / max(passing, 1):.1%})"
        )
        for reason, count in sorted(reasons.items()):
            print(f"  unverified: {reason}" + (f" (x{count})" if count > 1 else ""))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
