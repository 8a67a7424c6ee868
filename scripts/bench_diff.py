"""Time ``trex-eval benchmarks diff`` on every version pair of the shipped benchmarks.

The pairs: each shipped ``FAMILY@VERSION`` against its original ``FAMILY`` (the comparisons the
field-benchmark notes and tests make: MAMO against SIRL's fixes, IndustryOR against SIRL's
fixedV2, ...), and ``nl4opt-245`` against itself (the identical-versions test). For each pair
the table shows the load time (both versions), the diff's CPU seconds of this process
(``time.process_time``: other load on the machine inflates it less than wall time) and wall
seconds, the exact similarity ratios it computed (the quadratic part) and the counts it found.

    python scripts/bench_diff.py [--data-dir ../shared/benchmarks/t-rex] [PAIR ...]

A PAIR is ``A:B`` (``industryor:industryor@sirl-fixedv2``); none: every pair above.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from trex_eval.benchmarks import load_benchmark, shipped_spec_paths
from trex_eval.benchmarks.diff import diff

_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "t-rex"


def shipped_pairs() -> list[tuple[str, str]]:
    """Every shipped version against its family's original, then the identical-versions pair."""
    names = shipped_spec_paths()
    pairs = [
        (name.split("@")[0], name) for name in sorted(names) if "@" in name and name.split("@")[0] in names
    ]
    return [*pairs, ("nl4opt-245", "nl4opt-245")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=_DEFAULT_DATA)
    parser.add_argument("pairs", nargs="*", help="A:B pairs to time (default: every shipped version pair)")
    args = parser.parse_args()
    pairs = [tuple(pair.split(":", 1)) for pair in args.pairs] or shipped_pairs()
    header = (
        f"{'A':<15} {'B':<31} {'load s':>6} {'cpu s':>6} {'wall s':>6} {'ratios':>6}  "
        "matched by     | a | b | matched | reworded | relabelled | removed | added"
    )
    print(header)
    print("-" * len(header))
    slowest = 0.0
    for a, b in pairs:
        start = time.perf_counter()
        first, second = load_benchmark(a, data_dir=args.data_dir), load_benchmark(b, data_dir=args.data_dir)
        loaded = time.perf_counter()
        computed = [0]

        def count(done: int, planned: int, computed: list[int] = computed) -> None:
            computed[0] = done

        cpu = time.process_time()
        result = diff(first, second, progress=count)
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - loaded
        slowest = max(slowest, cpu)
        c = result.counts()
        print(
            f"{a:<15} {b:<31} {loaded - start:6.2f} {cpu:6.2f} {wall:6.2f} {computed[0]:6d}  "
            f"{result.matched_by:<14} | {c['a']} | {c['b']} | {c['matched']} | {c['reworded']} | "
            f"{c['relabelled']} | {c['removed']} | {c['added']}",
            flush=True,
        )
    print(f"slowest diff: {slowest:.2f} CPU s")


if __name__ == "__main__":
    main()
