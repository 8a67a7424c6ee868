#!/usr/bin/env python3
"""Ctrl-C at a random moment of a run: it exits 130 with the resume hint, and ``--resume`` finishes it.

Each try starts ``trex-eval run --model reference -b BENCHMARK --limit N`` in a process group of
its own (as a shell runs a foreground job), sends SIGINT to the whole group at a random moment
between 0 and ``--within`` seconds (what Ctrl-C in a terminal does: the solver libraries and
sandbox workers see it too, unless they are in groups of their own), then checks the exit status
(130; 0 only when the run had finished first), the message, and that ``--resume`` brings the run
to N graded samples. Prints one line a try and a summary; exits 1 when any try failed.

    python scripts/check_interrupts.py [--tries 20] [--within 8] [--limit 60] [--benchmark b4o-feasible]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_try(index: int, *, benchmark: str, limit: int, at_s: float, folder: Path) -> str | None:
    """One interrupted run and its resume; None when all held, else what went wrong."""
    run_dir = folder / f"run-{index}"
    command = [sys.executable, "-m", "trex_eval", "run", "--model", "reference", "-b", benchmark]
    process = subprocess.Popen(
        [*command, "--limit", str(limit), "--no-progress", "-o", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(at_s)
    finished_first = process.poll() is not None
    if not finished_first:
        os.killpg(process.pid, signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return "still running 120 s after Ctrl-C"
    if finished_first:
        return None if process.returncode == 0 else f"finished before the signal with {process.returncode}"
    if process.returncode != 130:
        return f"exit {process.returncode} (want 130): {stderr[-300:]!r}"
    if "interrupted" not in stderr:
        return f"no 'interrupted' message: {stderr[-300:]!r}"
    if not (run_dir / "manifest.json").is_file():
        return None  # stopped before the run stored anything: nothing to resume, as the message says
    resumed = subprocess.run(
        [sys.executable, "-m", "trex_eval", "run", "--resume", str(run_dir), "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if resumed.returncode != 0 or f"the run holds {limit} graded samples" not in resumed.stdout:
        return f"resume failed ({resumed.returncode}): {resumed.stdout[-300:]!r} {resumed.stderr[-300:]!r}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--within", type=float, default=8.0, help="latest moment of the signal, in seconds")
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--benchmark", default="b4o-feasible")
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for index in range(options.tries):
            at_s = rng.uniform(0.0, options.within)
            problem = one_try(
                index, benchmark=options.benchmark, limit=options.limit, at_s=at_s, folder=Path(folder)
            )
            failed += problem is not None
            print(f"try {index + 1:2}: Ctrl-C at {at_s:5.2f} s: {problem or 'ok'}", flush=True)
    print(f"{options.tries - failed}/{options.tries} tries held")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
