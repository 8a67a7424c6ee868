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

Prints every round's times, the medians, their ratio (a / b), both scores, and from the audit's
run directory the share of ``correct`` verdicts backed by a harness re-solve ("match") and the
share of all passing claims (correct + unverified) that were verified, with what stayed
unverified and why.

    TREX_DATA_DIR=... python scripts/bench_grading.py [--rounds 3] [--lanes 2] [--benchmark b4o-feasible]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.extract import extract
from trex_eval.records import Completion, ObjectiveReference, Problem

TIMEOUT_S = 360
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


def reference_path(programs: list[tuple[Problem, str]], lanes: int) -> tuple[float, int]:
    """(wall seconds, programs scored correct) for the §4.1 path over ``programs``."""
    started = time.perf_counter()
    with ThreadPoolExecutor(lanes) as pool:
        passed = sum(pool.map(lambda item: _reference_one(*item), programs))
    return time.perf_counter() - started, passed


def audit_path(benchmark: str, lanes: int, out: Path) -> tuple[float, int]:
    """(wall seconds, correct verdicts) for ``trex-eval audit`` as a fresh command."""
    command = [
        sys.executable, "-m", "trex_eval", "audit", benchmark,
        "--workers", str(lanes), "--out", str(out), "--no-progress",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    verdicts = Counter(json.loads(line)["grade"]["verdict"] for line in (out / "samples.jsonl").open())
    return elapsed, verdicts["correct"]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default="b4o-feasible")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(os.environ["TREX_DATA_DIR"])
    programs = _programs(args.benchmark, data_dir)
    print(f"{len(programs)} {args.benchmark} reference programs, {args.lanes} lanes, {os.cpu_count()} CPUs")
    scratch = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    reference_times: list[float] = []
    audit_times: list[float] = []
    last_run = scratch
    try:
        for round_index in range(args.rounds):
            ref_s, ref_passed = reference_path(programs, args.lanes)
            last_run = scratch / f"audit-{round_index}"
            audit_s, audit_passed = audit_path(args.benchmark, args.lanes, last_run)
            reference_times.append(ref_s)
            audit_times.append(audit_s)
            print(
                f"round {round_index + 1}: reference path {ref_s:6.2f} s ({ref_passed} correct)   "
                f"trex-eval audit {audit_s:6.2f} s ({audit_passed} correct)   ratio {ref_s / audit_s:.2f}x"
            )
        ref_median, audit_median = statistics.median(reference_times), statistics.median(audit_times)
        print(
            f"median: reference path {ref_median:.2f} s, trex-eval audit {audit_median:.2f} s, "
            f"ratio {ref_median / audit_median:.2f}x"
        )
        correct, matched, passing, reasons = verified_share(last_run)
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
