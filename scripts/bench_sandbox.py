#!/usr/bin/env python3
"""Throughput of the sandbox: programs per second through the warm pool vs a fresh interpreter.

For each of three tiny programs (PuLP with CBC, highspy, OR-Tools GLOP) it runs N programs through
a started :class:`~trex_eval.sandbox.SandboxPool` (``--workers`` lanes, isolation as probed, the
last solve verified as a run verifies it) and M programs as ``python program.py`` in fresh,
unsandboxed interpreters on as many lanes, then prints one table. Pool start-up is not timed;
every pool run must end ``ok`` with the expected objective, or the script fails.

A busy shared machine distorts wall-clock rates, so two more columns help read them: the CPU time
one pooled program costs in total (harness + worker + the program's own processes, from the
kernel's accounting) with the rate that implies on idle cores, and the ceiling at this moment: a
bare fork server (the library under test pre-imported, fork + exec + exit per program, no sandbox, no
hooks, no records). The pool and the bare fork server are measured in alternating rounds
(``--rounds``), so that both see the same load; ``pool/bare`` is the median of the rounds' ratios.

``--against TREE`` measures a second version of the harness in the same run, alternating with
this one round by round (its ``before/bare`` share, and ``kept``: this tree's share over it): a
folder holding another ``trex_eval`` package (e.g. made by ``git archive HEAD trex_eval |
tar -x -C /tmp/before``), imported first in a helper process that keeps its own pool warm
between rounds.

    python scripts/bench_sandbox.py [--programs 200] [--fresh-programs 24] [--workers 2]
        [--rounds 3] [--no-verify] [--against TREE]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trex_eval.records import ExecStatus, Execution
from trex_eval.sandbox import Job, SandboxPool

# max 3x + 2y  s.t. x + y <= 4, x + 3y <= 6, 0 <= x <= 3: optimum x = 3, y = 1, objective 11.
PROGRAMS = {
    "PuLP (CBC)": """
import pulp
problem = pulp.LpProblem("bench", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 3)
y = pulp.LpVariable("y", 0)
problem += 3 * x + 2 * y
problem += x + y <= 4
problem += x + 3 * y <= 6
problem.solve(pulp.PULP_CBC_CMD(msg=0))
print(pulp.value(problem.objective))
""",
    "HiGHS (highspy)": """
import highspy
h = highspy.Highs()
h.silent()
x = h.addVariable(lb=0, ub=3)
y = h.addVariable(lb=0)
h.addConstr(x + y <= 4)
h.addConstr(x + 3 * y <= 6)
h.maximize(3 * x + 2 * y)
print(h.getInfo().objective_function_value)
""",
    "OR-Tools (GLOP)": """
from ortools.linear_solver import pywraplp
solver = pywraplp.Solver.CreateSolver("GLOP")
x = solver.NumVar(0, 3, "x")
y = solver.NumVar(0, solver.infinity(), "y")
solver.Add(x + y <= 4)
solver.Add(x + 3 * y <= 6)
solver.Maximize(3 * x + 2 * y)
solver.Solve()
print(solver.Objective().Value())
""",
}
OPTIMUM = 11.0
LIBRARY = {
    "PuLP (CBC)": ("pulp",),
    "HiGHS (highspy)": ("highspy",),
    "OR-Tools (GLOP)": ("ortools.linear_solver.pywraplp",),
}
"""What a warmed worker holds for each program (and what the bare fork server pre-imports)."""


def process_tree_cpu_s() -> float:
    """CPU seconds used so far by this process, its threads, and all its live descendants
    (including what those descendants' reaped children used)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            parents.setdefault(int(fields[1]), []).append(int(entry))
    total, frontier = 0.0, list(parents.get(os.getpid(), []))
    while frontier:
        pid = frontier.pop()
        fields = stats[pid]
        total += sum(int(value) for value in fields[11:15]) / ticks
        frontier += parents.get(pid, [])
    own = os.times()
    return total + own.user + own.system


def rate(count: int, lanes: int, task: Callable[[int], None]) -> float:
    """Programs per second for ``count`` calls of ``task`` spread over ``lanes`` threads."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=lanes) as executor:
        list(executor.map(task, range(count)))
    return count / (time.perf_counter() - started)


def _verifier(verify: bool) -> Callable[[Execution], Execution]:
    """What verifies a pooled program's last solve, in the thread that ran it: the harness's
    verification stage (``trex_eval.verify``; in trees before it moved, ``trex_eval.sandbox.verify``),
    or nothing (``--no-verify``)."""
    if not verify:
        return lambda execution: execution
    try:
        module = importlib.import_module("trex_eval.verify")
    except ImportError:
        module = importlib.import_module("trex_eval.sandbox.verify")
    checked: Callable[[Execution], Execution] = module.verify_last_solve
    return checked


def new_pool(*, workers: int) -> SandboxPool:
    """A pool that runs programs only (trees whose pool could verify by itself are told not to:
    the runner verifies, as a run's grading step does)."""
    if "verify" in inspect.signature(SandboxPool).parameters:
        return SandboxPool(workers=workers, verify=False)  # type: ignore[call-arg]
    return SandboxPool(workers=workers)


VERIFY: Callable[[Execution], Execution] = _verifier(True)


def _checked_runner(pool: SandboxPool, code: str) -> Callable[[int], None]:
    job = Job(code=code)

    def one(_: int) -> None:
        execution = VERIFY(pool.run(job))
        solve = execution.last_solve
        if (
            execution.status is not ExecStatus.OK
            or solve is None
            or abs((solve.objective or 0) - OPTIMUM) > 1e-6
        ):
            raise SystemExit(
                f"pool run failed: {execution.status.value} {execution.detail} {execution.stderr_tail}"
            )

    return one


def warm_pool(pool: SandboxPool, code: str) -> None:
    """Workers import a library once two of their programs used it (DEFAULT_WARMABLE): warm them."""
    one = _checked_runner(pool, code)
    for index in range(4 * pool.workers):
        one(index)


def pool_rate(pool: SandboxPool, code: str, count: int) -> tuple[float, float]:
    """Programs per second through a warmed ``pool``, and CPU milliseconds per program."""
    one = _checked_runner(pool, code)
    cpu_before = process_tree_cpu_s()
    programs_per_s = rate(count, pool.workers, one)
    return programs_per_s, (process_tree_cpu_s() - cpu_before) / count * 1000


def fresh_rate(code: str, count: int, lanes: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program.py"
        program.write_text(code)

        def one(_: int) -> None:
            done = subprocess.run(
                [sys.executable, str(program)], capture_output=True, text=True, cwd=folder, check=False
            )
            if done.returncode != 0 or abs(float(done.stdout.split()[-1]) - OPTIMUM) > 1e-6:
                raise SystemExit(f"fresh run failed: {done.stderr[-500:]}")

        one(0)
        return rate(count, lanes, one)


BARE_FORK_SERVER = """
import importlib, os, sys, time
for name in sys.argv[2].split(","):
    importlib.import_module(name)
code = compile(open(sys.argv[1]).read(), "program.py", "exec")
null = os.open(os.devnull, os.O_WRONLY)
for _ in range(int(sys.argv[3])):
    pid = os.fork()
    if pid == 0:
        os.dup2(null, 1)
        exec(code, {"__name__": "__main__"})
        os._exit(0)
    os.waitpid(pid, 0)
"""


def bare_fork_rate(code: str, count: int, lanes: int, preload: tuple[str, ...]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program.py"
        program.write_text(code)
        command = [sys.executable, "-c", BARE_FORK_SERVER, str(program), ",".join(preload)]
        # Start-up (imports) is excluded by timing a short run and a long run and taking the difference.
        timings = []
        for runs in (2, 2 + count // lanes):
            started = time.perf_counter()
            servers = [subprocess.Popen([*command, str(runs)], cwd=folder) for _ in range(lanes)]
            if any(server.wait() != 0 for server in servers):
                raise SystemExit("bare fork server failed")
            timings.append(time.perf_counter() - started)
        return lanes * (count // lanes) / (timings[1] - timings[0])


class OtherTree:
    """A helper process running this script's ``--serve`` mode with ``trex_eval`` imported from
    another folder: one warm pool per library, measured on request."""

    def __init__(self, tree: str, name: str, *, workers: int, verify: bool) -> None:
        environment = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
        command = [sys.executable, __file__, "--serve", name, "--workers", str(workers)]
        self.process = subprocess.Popen(
            [*command, *([] if verify else ["--no-verify"])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment,
        )
        self.source = str(self._answer()["trex_eval"])

    def _answer(self) -> dict[str, object]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the --against helper failed (exit {self.process.wait()})")
        found: dict[str, object] = json.loads(line)
        return found

    def rate(self, count: int) -> tuple[float, float]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        found = self._answer()
        return float(found["rate"]), float(found["cpu_ms"])  # type: ignore[arg-type]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def serve(name: str, *, workers: int, verify: bool) -> None:
    """``--serve``: a warm pool for ``name``; each line on stdin is a count to measure."""
    import trex_eval

    global VERIFY
    VERIFY = _verifier(verify)
    with new_pool(workers=workers) as pool:
        warm_pool(pool, PROGRAMS[name])
        print(json.dumps({"trex_eval": os.path.dirname(trex_eval.__file__)}), flush=True)
        for line in sys.stdin:
            programs_per_s, cpu_ms = pool_rate(pool, PROGRAMS[name], int(line))
            print(json.dumps({"rate": programs_per_s, "cpu_ms": cpu_ms}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--programs", type=int, default=200, help="programs per library through the pool")
    parser.add_argument("--fresh-programs", type=int, default=24, help="programs per library, fresh python")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="pool workers = lanes")
    parser.add_argument("--no-verify", action="store_true", help="skip the HiGHS re-solve in the harness")
    parser.add_argument("--rounds", type=int, default=3, help="alternating pool / bare fork rounds")
    parser.add_argument("--against", metavar="TREE", help="also measure the trex_eval package in TREE")
    parser.add_argument("--only", choices=sorted(PROGRAMS), action="append", help="measure only these")
    parser.add_argument("--serve", choices=sorted(PROGRAMS), help=argparse.SUPPRESS)
    options = parser.parse_args()
    verify = not options.no_verify
    global VERIFY
    VERIFY = _verifier(verify)
    if options.serve:
        serve(options.serve, workers=options.workers, verify=verify)
        return

    rows = []
    chunk = max(options.workers, options.programs // options.rounds)
    against_source = None
    for name, code in PROGRAMS.items():
        if options.only and name not in options.only:
            continue
        other = (
            OtherTree(options.against, name, workers=options.workers, verify=verify)
            if options.against
            else None
        )
        # A fresh pool per library: a warmed worker holds what its workload uses, as in a run.
        with new_pool(workers=options.workers) as pool:
            warm_pool(pool, code)
            pooled, cpu, bare, ratios, before, before_cpu, before_ratios = [], [], [], [], [], [], []
            for _ in range(options.rounds):
                bare.append(bare_fork_rate(code, chunk, options.workers, LIBRARY[name]))
                if other is not None:
                    measured, cpu_ms = other.rate(chunk)
                    before.append(measured)
                    before_cpu.append(cpu_ms)
                    before_ratios.append(measured / bare[-1])
                measured, cpu_ms = pool_rate(pool, code, chunk)
                pooled.append(measured)
                cpu.append(cpu_ms)
                ratios.append(measured / bare[-1])
            fresh = fresh_rate(code, options.fresh_programs, options.workers)
            isolation = pool.isolation
        if other is not None:
            against_source = other.source
            other.close()
        rows.append(
            (
                name,
                statistics.median(pooled),
                statistics.median(cpu),
                fresh,
                statistics.median(bare),
                statistics.median(ratios),
                (statistics.median(before), statistics.median(before_cpu), statistics.median(before_ratios))
                if before
                else None,
                [round(value, 1) for value in pooled],
                [round(value, 1) for value in bare],
            )
        )

    load = os.getloadavg()[0]
    print(
        f"isolation: {isolation}   lanes: {options.workers}   cores: {os.cpu_count()}   "
        f"verification: {'on' if verify else 'off'}   rounds: {options.rounds} x {chunk} programs   "
        f"load average at end: {load:.1f}"
    )
    if against_source:
        print(f"'before' columns: trex_eval from {against_source}")
    cores = os.cpu_count() or 1
    print(
        f"{'program':<18} {'pool /s':>8} {'fresh python /s':>16} {'speed-up':>9} {'CPU ms/program':>15} "
        f"{'idle-core estimate /s':>22} {'bare fork /s':>13} {'pool/bare':>10}"
        + (
            f" {'before /s':>10} {'before CPU ms':>14} {'before/bare':>12} {'kept':>6}"
            if against_source
            else ""
        )
    )
    for name, pooled, cpu_ms, fresh, bare, ratio, before_pair, pool_rounds, bare_rounds in rows:
        line = (
            f"{name:<18} {pooled:>8.1f} {fresh:>16.1f} {pooled / fresh:>8.1f}x {cpu_ms:>15.1f} "
            f"{cores * 1000 / cpu_ms:>22.0f} {bare:>13.1f} {ratio:>9.0%}"
        )
        if before_pair is not None:
            # "kept": this tree's share of the bare fork server over the other tree's, same rounds.
            line += (
                f" {before_pair[0]:>10.1f} {before_pair[1]:>14.1f} {before_pair[2]:>11.0%}"
                f" {ratio / before_pair[2]:>6.0%}"
            )
        print(line + f"   rounds: pool {pool_rounds} bare {bare_rounds}")


if __name__ == "__main__":
    main()
