"""The size of each MIPLIB-NL reference model (issue 49): variables, constraints, nonzeros.

The data files do not say how big a model they make (generated instances such as
chromaticindex1024-7 have no data files at all), so the size is measured the only faithful way:
each instance's reference program (``solve.py``) runs through the real sandbox on the
licence-free gurobipy layer, with its data by reference as a run gives them, and stops at its
first ``optimize()`` -- which, instead of solving, prints the model's counts and ends the program.
The cost is building the model, never solving it.

Writes ``benchmarks/notes/miplib-nl-sizes.csv`` (``trex_eval.benchmarks.scale`` reads it into each
row): ``instance``, ``variables``, ``constraints``, ``nonzeros``, ``integers`` (integer and binary
variables), ``build_cpu_s`` and ``build_rss_mib`` (the sandboxed build's CPU seconds and peak
resident memory), and ``note`` (empty when measured; else why not: over the build budget, left
out of the benchmark). An instance left out for a data file absent here keeps the row it had, so
a partial copy never erases what a complete one measured.

    TREX_DATA_DIR=... TREX_SOURCES_DIR=... python scripts/miplib_nl_sizes.py [--only a,b] [--workers 2]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.loading import Benchmark
from trex_eval.benchmarks.scale import SIZE_FIELDS
from trex_eval.protocols.plan import plan_for
from trex_eval.records import ExecStatus, Execution, Problem, Program
from trex_eval.sandbox import SandboxLimits, SandboxPool

MARK = "TREX-SIZE "
STOP_AT_OPTIMIZE = f'''
import json as _trex_json, os as _trex_os, sys as _trex_sys
import gurobipy as _trex_gp

def _trex_counts(self, *args, **kwargs):
    # The reference program's model as built: count it, print it, end the program unsolved.
    self.update()
    _trex_sys.stdout.write("{MARK}" + _trex_json.dumps({{
        "variables": self.NumVars, "constraints": self.NumConstrs + self.NumQConstrs
        + self.NumGenConstrs + self.NumSOS, "nonzeros": self.NumNZs, "integers": self.NumIntVars,
    }}) + "\\n")
    _trex_sys.stdout.flush()
    _trex_os._exit(0)

_trex_gp.Model.optimize = _trex_counts
_trex_file = globals().get("__file__", "solve.py")
exec(compile(_TREX_SOURCE, _trex_file, "exec"), {{"__name__": "__main__", "__file__": _trex_file}})
'''
"""Runs ``solve.py`` (its text bound to ``_TREX_SOURCE``, compiled on its own so that its
``from __future__`` imports stay first) with its first ``optimize()`` printing the counts and
ending the program."""
BUILD_LIMITS = SandboxLimits(wall_s=600.0, cpu_s=300.0, memory_mib=12288, output_bytes=4_000_000)
"""A model build's budget here (2 shared cores, 23 GiB): 300 CPU s and 12 GiB."""
OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "notes" / "miplib-nl-sizes.csv"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", default="", help="comma-separated instances (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    bench = load_benchmark("miplib-nl", data_dir=Path(os.environ["TREX_DATA_DIR"]))
    rows = _read(args.out)
    wanted = {name for name in args.only.split(",") if name} or {p.id for p in bench.problems}
    problems = sorted((p for p in bench.problems if p.id in wanted), key=lambda p: p.id)
    started = time.monotonic()
    with SandboxPool(workers=args.workers, hidden=(str(bench.root),), limits=BUILD_LIMITS) as pool:

        def measured(problem: Problem) -> dict[str, str]:
            row = _row(problem.id, _build(bench, pool, problem))
            print(f"{time.monotonic() - started:7.1f}s {json.dumps(row)}", flush=True)
            return row

        with ThreadPoolExecutor(args.workers) as lanes:
            for row in lanes.map(measured, problems):
                rows[row["instance"]] = row
    for skipped in bench.skipped:
        name = Path(skipped.where).name
        rows.setdefault(name, dict.fromkeys(SIZE_FIELDS, "") | {"instance": name, "note": skipped.message})
    _write(args.out, rows)
    print(f"{args.out}: {len(rows)} rows, {len(problems)} built in {time.monotonic() - started:.0f} s")


def _build(bench: Benchmark, pool: SandboxPool, problem: Problem) -> Execution:
    plan = plan_for(bench, gurobi="highs")
    source = f"_TREX_SOURCE = {problem.reference_code or ''!r}\n"
    program = Program(code=source + STOP_AT_OPTIMIZE, extractor="raw", reason="")
    job = plan.job(problem, program).model_copy(update={"expect": "any"})
    return pool.run(job, limits=BUILD_LIMITS)


def _row(name: str, execution: Execution) -> dict[str, str]:
    row = dict.fromkeys(SIZE_FIELDS, "") | {"instance": name}
    row["build_cpu_s"] = "" if execution.cpu_s is None else f"{execution.cpu_s:.1f}"
    row["build_rss_mib"] = "" if execution.max_rss_mib is None else f"{execution.max_rss_mib:.0f}"
    found = [line for line in execution.stdout_tail.splitlines() if line.startswith(MARK)]
    if found and execution.status is ExecStatus.OK:
        counts = json.loads(found[-1][len(MARK) :])
        row |= {key: str(int(counts[key])) for key in ("variables", "constraints", "nonzeros", "integers")}
    elif execution.status is ExecStatus.TIMEOUT:
        row["note"] = f"model build over {BUILD_LIMITS.cpu_s:g} CPU s"
    elif execution.status is ExecStatus.MEMORY_LIMIT:
        row["note"] = f"model build over {BUILD_LIMITS.memory_mib} MiB"
    else:
        said = (execution.stderr_tail or execution.detail or execution.stdout_tail).strip().splitlines()
        row["note"] = f"{execution.status.value}, no model built: {said[-1] if said else 'no output'}"[:200]
    return row


def _read(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["instance"]: row for row in csv.DictReader(handle)}


def _write(path: Path, rows: dict[str, dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SIZE_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows[name] for name in sorted(rows))


if __name__ == "__main__":
    sys.exit(main())
