"""The committed MIPLIB-NL audit (issue 49): every complete instance's reference program, run
through the licence-free gurobipy layer on HiGHS and graded by the ``budgeted`` rule with this
machine's budgets; every instance left out of the benchmark listed as not run, with why.

Writes ``results/published/audit-miplib-nl.csv``: the audit's columns (``trex-eval audit``), each
program's ``wall_s`` and ``cpu_s``, and its reference model's size (``variables``,
``constraints``, ``size_bucket``: ``benchmarks/notes/miplib-nl-sizes.csv``). The sandbox stops a
program at the rule's CPU budget (``EvaluationPlan.limits_for``). Prints the verdicts by size
bucket. ``--out-dir`` names the run directory (default: a fresh one under results/).
Usage (about an hour on 2 shared cores with the default budget)::

    TREX_DATA_DIR=... TREX_SOURCES_DIR=... python scripts/audit_miplib_nl.py [--rule budgeted:30,verify=30]
        [--only a,b | --bucket small] [--gurobi highs|real|auto] [--out results/published/audit-miplib-nl.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections import Counter
from pathlib import Path

from trex_eval.benchmarks import load_benchmark
from trex_eval.grading.registry import get_rule
from trex_eval.run.audit import CSV_FIELDS, audit

RULE = "budgeted:30,verify=30"
"""This machine's budgets (2 shared cores, the whole set in about an hour): 30 CPU s a program
and 30 a re-solve. The benchmark's own rule is budgeted@1:cpu=600,verify=120."""
FIELDS = (*CSV_FIELDS, "wall_s", "cpu_s", "variables", "constraints", "size_bucket")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("results/published/audit-miplib-nl.csv"))
    parser.add_argument("--rule", default=RULE)
    parser.add_argument("--only", default="", help="comma-separated instances (default: every complete one)")
    parser.add_argument("--out-dir", type=Path, default=None, help="the audit's run directory")
    parser.add_argument(
        "--gurobi", choices=("highs", "real", "auto"), default="highs",
        help="gurobipy as the layer on HiGHS (default), or the installed one (its licence's limits)",
    )  # fmt: skip
    parser.add_argument("--bucket", default="", help="only the instances of this size bucket")
    args = parser.parse_args()
    data_dir = Path(os.environ["TREX_DATA_DIR"])
    bench = load_benchmark("miplib-nl", data_dir=data_dir)
    wanted = tuple(name for name in args.only.split(",") if name) or tuple(
        p.id for p in bench.problems if args.bucket in ("", p.meta.get("size_bucket"))
    )
    result = audit(
        ["miplib-nl"],
        data_dir=data_dir,
        rules=(args.rule,),
        gurobi=args.gurobi,
        problem_ids={"miplib-nl": wanted},
        show_progress=False,
        out=args.out_dir,
    )
    times = _times(result.run_dir / "samples.jsonl")
    rows = [{**row, **times.get(row["id"], {}), **_size(bench.get(row["id"]).meta)} for row in result.rows]
    spec = get_rule(args.rule).spec
    for skipped in () if args.only or args.bucket else bench.skipped:
        rows.append(_not_run(Path(skipped.where).name, f"not run: {skipped.message}", spec))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    by_bucket = Counter((row.get("size_bucket") or "-", row["verdict"]) for row in rows)
    for (bucket, verdict), count in sorted(by_bucket.items()):
        print(f"{bucket:8} {verdict:12} {count}")
    print(
        f"{args.out}: {len(result.rows)} audited, {len(rows) - len(result.rows)} not run ({result.run_dir})"
    )


def _times(samples: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    with samples.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            execution = record.get("execution") or {}
            cpu = execution.get("cpu_s")
            found[record["problem_id"]] = {
                "wall_s": f"{execution.get('wall_s', 0.0):.1f}",
                "cpu_s": "" if cpu is None else f"{cpu:.1f}",
            }
    return found


def _size(meta: dict[str, str]) -> dict[str, str]:
    return {key: meta.get(key, "") for key in ("variables", "constraints", "size_bucket")}


def _not_run(problem_id: str, reason: str, rule: str) -> dict[str, str]:
    return dict.fromkeys(FIELDS, "") | {
        "benchmark": "miplib-nl",
        "id": problem_id,
        "verdict": "not_run",
        "rule": rule,
        "reason": reason,
    }


if __name__ == "__main__":
    main()
