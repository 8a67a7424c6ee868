"""The committed MIPLIB-NL audit (issue 49): the reference programs of the instances that fit this
machine's budget, run through the licence-free gurobipy layer on HiGHS and graded by the
``budgeted`` rule with this machine's budgets; every other instance listed as not run, with why.

Writes ``results/published/audit-miplib-nl.csv``: the audit's columns (``trex-eval audit``) plus
``wall_s`` and ``cpu_s`` of each program. Usage (about 5 minutes on 2 loaded cores)::

    TREX_DATA_DIR=... python scripts/audit_miplib_nl.py [--out results/published/audit-miplib-nl.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from pathlib import Path

from trex_eval.benchmarks import load_benchmark
from trex_eval.run.audit import CSV_FIELDS, audit
from trex_eval.sandbox import SandboxLimits

AUDITED = (
    "flugpl", "gr4x6", "assign1-5-8", "stein9inf", "stein15inf", "b-ball", "pigeon-08", "flugplinf",
    "ej", "air03", "chromaticindex32-8", "pigeon-10", "markshare_4_0", "graph20-20-1rand", "bppc4-08",
    "sorrell3",
)  # fmt: skip
"""The instances under this machine's budget: the ones measured so far plus the smallest MIPLIB
2017 instances of the set (by MIPLIB's sizes); the hard small ones (markshare_4_0, pigeon-10)
are there to show the budget's verdicts."""
RULE = "budgeted:60,verify=60"
"""This machine's budgets (2 shared cores, ~5 minutes for the whole audit): 60 CPU s a program
and a re-solve. The benchmark's own rule is budgeted@1:cpu=600,verify=120."""
WALL_S = 90.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("results/published/audit-miplib-nl.csv"))
    args = parser.parse_args()
    data_dir = Path(os.environ["TREX_DATA_DIR"])
    bench = load_benchmark("miplib-nl", data_dir=data_dir)
    result = audit(
        ["miplib-nl"],
        data_dir=data_dir,
        rules=(RULE,),
        gurobi="highs",
        limits=SandboxLimits(wall_s=WALL_S, cpu_s=WALL_S),
        problem_ids={"miplib-nl": AUDITED},
        show_progress=False,
    )
    times: dict[str, tuple[str, str]] = {}
    with (result.run_dir / "samples.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            execution = record.get("execution") or {}
            cpu = execution.get("cpu_s")
            times[record["problem_id"]] = (
                f"{execution.get('wall_s', 0.0):.1f}",
                "" if cpu is None else f"{cpu:.1f}",
            )
    rows = [{**row, "wall_s": times.get(row["id"], ("", ""))[0], "cpu_s": times.get(row["id"], ("", ""))[1]}
            for row in result.rows]  # fmt: skip
    over = "not run: over this machine's audit budget (2 shared cores, ~5 minutes in all); run it with "
    for problem in sorted(bench.problems, key=lambda p: p.id):
        if problem.id not in AUDITED:
            rows.append(_not_run(problem.id, over + "`trex-eval audit -b miplib-nl` where time allows"))
    for skipped in bench.skipped:
        rows.append(_not_run(Path(skipped.where).name, f"not run: {skipped.message}"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=(*CSV_FIELDS, "wall_s", "cpu_s"), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(
        f"{args.out}: {len(result.rows)} audited, {len(rows) - len(result.rows)} not run ({result.run_dir})"
    )


def _not_run(problem_id: str, reason: str) -> dict[str, str]:
    return dict.fromkeys((*CSV_FIELDS, "wall_s", "cpu_s"), "") | {
        "benchmark": "miplib-nl",
        "id": problem_id,
        "verdict": "not_run",
        "rule": RULE,
        "reason": reason,
    }


if __name__ == "__main__":
    main()
