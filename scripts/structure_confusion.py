"""Confusion tables of the ORGEval structure rules on a seeded perturbation corpus built from
the 394 ORGEval reference LPs (``tests/support/structure_corpus.py``: equivalent rewrites and
real changes, each written to LP text and read back).

For each rule: counts of verdicts (correct / wrong / not_determinable) against the truth
(equivalent / different), the false-equivalent (a real change judged correct) and
false-different (an equivalent rewrite judged wrong) counts with up to three examples each, and
a breakdown by transformation. CPU seconds of the checks (parsing excluded) are printed too.

    python scripts/structure_confusion.py [--data-dir ../shared/benchmarks/t-rex] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# The corpus and the LP writer are test support, not part of the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from structure_corpus import DIFFERENT, EQUIVALENT, Case, corpus

from trex_eval.grading.structure.exact import check_exact
from trex_eval.grading.structure.fixed import check_fixed
from trex_eval.lp import parse_lp
from trex_eval.protocols.trex_compat.structure import check_trex_compat
from trex_eval.records import Grade, LinearModel

Rule = Callable[[LinearModel, LinearModel], Grade]
RULES: dict[str, Rule] = {
    "orgeval-trex-compat": check_trex_compat,
    "orgeval-fixed": check_fixed,
    "orgeval-exact": check_exact,
}
VERDICTS = ("correct", "wrong", "not_determinable")
_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "t-rex"


def _table(name: str, cases: list[Case], grades: list[Grade], seconds: float) -> None:
    cells: Counter[tuple[bool, str]] = Counter()
    by_transformation: dict[str, Counter[str]] = {}
    false_equivalent, false_different = [], []
    for case, grade in zip(cases, grades, strict=True):
        verdict = grade.verdict.value
        cells[case.equivalent, verdict] += 1
        by_transformation.setdefault(case.transformation, Counter())[verdict] += 1
        if verdict == "correct" and not case.equivalent:
            false_equivalent.append(f"BENCH4OPT_{case.item} {case.transformation}")
        if verdict == "wrong" and case.equivalent:
            false_different.append(f"BENCH4OPT_{case.item} {case.transformation}: {grade.reason}")
    print(f"\n## {name}  ({len(cases)} pairs, {seconds:.2f} CPU s of checks)\n")
    print(f"| truth \\ verdict | {' | '.join(VERDICTS)} |")
    print(f"|---|{'---:|' * len(VERDICTS)}")
    for truth, label in ((True, "equivalent"), (False, "different")):
        print(f"| {label} | {' | '.join(str(cells[truth, v]) for v in VERDICTS)} |")
    print(f"\nfalse-equivalent: {len(false_equivalent)}  false-different: {len(false_different)}")
    for title, examples in (("false-equivalent", false_equivalent), ("false-different", false_different)):
        for example in examples[:3]:
            print(f"  {title} e.g. {example}")
    print("\n| transformation | truth | " + " | ".join(VERDICTS) + " |")
    print("|---|---|" + "---:|" * len(VERDICTS))
    for transformation in (*EQUIVALENT, *DIFFERENT):
        counts = by_transformation.get(transformation, Counter())
        truth = "equivalent" if transformation in EQUIVALENT else "different"
        print(f"| {transformation} | {truth} | {' | '.join(str(counts[v]) for v in VERDICTS)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=_DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = args.data_dir / "data" / "bench4opt" / "lp_code"
    references = [parse_lp((folder / f"model_{k}_problem{k}.lp").read_text()) for k in range(394)]
    started = time.process_time()
    cases = corpus(references, seed=args.seed)
    counts = Counter(case.equivalent for case in cases)
    print(
        f"corpus: {len(cases)} pairs ({counts[True]} equivalent, {counts[False]} different), seed "
        f"{args.seed}, built in {time.process_time() - started:.1f} CPU s"
    )
    for name, rule in RULES.items():
        started = time.process_time()
        grades = [rule(references[case.item], case.generated) for case in cases]
        _table(name, cases, grades, time.process_time() - started)


if __name__ == "__main__":
    main()
