"""Time the ORGEval structural-equivalence rules on the 394 ORGEval reference LPs.

Two workloads, each 394 (reference, generated) pairs:

* ``reference``: every reference LP against itself (both sides parsed from the file text);
* ``perturbed``: every reference LP against an equivalent copy (variables renamed and
  reordered, rows reordered and scaled by random factors of either sign, objective sense
  flipped), written to LP text beforehand so that parsing it is part of the measurement.

For each workload and rule the table shows the parse time (both sides), the check time, their
sum and the verdict counts. CPU seconds of this process (``time.process_time``), so other load
on the machine does not inflate them; wall seconds are printed too.

    python scripts/bench_structure.py [--data-dir ../shared/benchmarks/t-rex] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# The perturbation and LP-writing helpers are test support, not part of the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from lp_writer import write_lp
from structure_perturb import perturb

from trex_eval.grading.structure.exact import check_exact
from trex_eval.grading.structure.fixed import check_fixed
from trex_eval.lp import parse_lp
from trex_eval.protocols.trex_compat.structure import check_trex_compat
from trex_eval.records import Grade, LinearModel

Rule = Callable[[LinearModel, LinearModel], Grade]
_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "t-rex"


def _workloads(data_dir: Path, seed: int) -> dict[str, list[tuple[str, str]]]:
    folder = data_dir / "data" / "bench4opt" / "lp_code"
    references = [(folder / f"model_{k}_problem{k}.lp").read_text() for k in range(394)]
    perturbed = []
    for k, text in enumerate(references):
        perturbed.append(write_lp(perturb(parse_lp(text), seed=seed + k)))
    return {
        "reference": [(text, text) for text in references],
        "perturbed": list(zip(references, perturbed, strict=True)),
    }


def _measure(pairs: list[tuple[str, str]], rule: Rule) -> tuple[float, float, float, Counter[str]]:
    wall = time.perf_counter()
    parse_s = check_s = 0.0
    verdicts: Counter[str] = Counter()
    for reference_text, generated_text in pairs:
        start = time.process_time()
        reference, generated = parse_lp(reference_text), parse_lp(generated_text)
        parsed = time.process_time()
        verdicts[rule(reference, generated).verdict.value] += 1
        parse_s += parsed - start
        check_s += time.process_time() - parsed
    return parse_s, check_s, time.perf_counter() - wall, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=_DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    workloads = _workloads(args.data_dir, args.seed)
    rules: dict[str, Rule] = {"exact": check_exact, "fixed": check_fixed, "trex-compat": check_trex_compat}
    header = (
        f"{'rule':<12} {'workload':<10} {'pairs':>5} {'parse s':>8} {'check s':>8} {'total s':>8} "
        f"{'wall s':>7}  verdicts"
    )
    print(header)
    print("-" * len(header))
    totals: dict[str, float] = {}
    for rule_name, rule in rules.items():
        for workload, pairs in workloads.items():
            parse_s, check_s, wall_s, verdicts = _measure(pairs, rule)
            totals[rule_name] = totals.get(rule_name, 0.0) + parse_s + check_s
            counts = ", ".join(f"{verdict} {n}" for verdict, n in sorted(verdicts.items()))
            print(
                f"{rule_name:<12} {workload:<10} {len(pairs):>5} {parse_s:>8.2f} {check_s:>8.2f} "
                f"{parse_s + check_s:>8.2f} {wall_s:>7.2f}  {counts}"
            )
    pairs_total = sum(len(pairs) for pairs in workloads.values())
    for rule_name, total in totals.items():
        print(f"{rule_name}: {total:.2f} CPU s for {pairs_total} pairs, parse included")


if __name__ == "__main__":
    main()
