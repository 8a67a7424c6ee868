#!/usr/bin/env python3
"""The harness's fixed cost: CPU seconds of the whole process tree and wall seconds of short
commands, best of N rounds.

Measures, each as a fresh ``python -m trex_eval`` process:

- ``help``: ``trex-eval --help`` (the import of the CLI and its first screen);
- ``run``: ``trex-eval run --model reference -b nl4opt --limit 2 --out DIR`` (a new DIR each
  round: sandbox pool, verifier processes, two samples graded);
- ``audit``: ``trex-eval audit b4o-feasible --out DIR`` (the reference solutions of one benchmark).

CPU seconds are those of the command's process tree: each round runs in a cgroup v1 ``cpuacct``
group of its own where the harness may make one (as root), whose usage counts every descendant,
the sandbox workers and verifier processes included, reaped or not; elsewhere the rusage of the
waited-for children (``RUSAGE_CHILDREN``), which misses a descendant nobody waited for and says so.
Best of N is the least of each figure over the rounds (on a shared machine the least is the
closest to the work itself). ``--tree DIR`` runs another copy of the ``trex_eval`` package (a
folder holding ``trex_eval/`` and the shipped files beside it, e.g. ``git archive HEAD trex_eval
gurobipy_highs benchmarks prompts | tar -x -C DIR``) in alternate rounds, for a before/after on the
same machine state; compare only figures of one invocation (the machine's load moves them).

    python scripts/bench_startup.py [--rounds 5] [--tree DIR] [help run audit]

Needs ``TREX_DATA_DIR`` (or pulled data) for ``run`` and ``audit``. Exits 1 when a command fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cgroup_cpu import remove_group

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "help": lambda out: ["--help"],
    "run": lambda out: ["run", "--model", "reference", "-b", "nl4opt", "--limit", "2", "--out", str(out)],
    "audit": lambda out: ["audit", "b4o-feasible", "--out", str(out)],
}


@dataclass(frozen=True)
class Round:
    """One command's cost: ``cpu`` seconds of its process tree (user + system), ``wall`` seconds,
    and ``whole_tree``: whether ``cpu`` came from a cgroup (every descendant) or rusage (reaped ones)."""

    cpu: float
    wall: float
    whole_tree: bool


def measure(arguments: list[str], *, tree: str | None) -> Round:
    """Run ``python -m trex_eval ARGUMENTS`` once (``tree``: a folder on ``PYTHONPATH`` holding
    another ``trex_eval``); raises RuntimeError with its stderr when it exits non-zero."""
    candidate = CPUACCT / f"trex-bench-startup-{os.getpid()}-{time.monotonic_ns()}"
    group: Path | None = candidate
    try:
        candidate.mkdir()
    except OSError:
        group = None

    def enter() -> None:
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    env = {**os.environ, **({"PYTHONPATH": os.path.abspath(tree)} if tree else {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "trex_eval", *arguments],
        preexec_fn=enter,
        # Not the checkout: `-m` puts the working directory first on sys.path, ahead of --tree.
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if group is not None:
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        remove_group(group)
    if done.returncode != 0:
        raise RuntimeError(
            f"trex-eval {' '.join(arguments)} exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    return Round(cpu=cpu, wall=wall, whole_tree=group is not None)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("commands", nargs="*", default=list(COMMANDS), choices=list(COMMANDS))
    parser.add_argument("--rounds", type=int, default=5, help="rounds per command (default 5)")
    parser.add_argument(
        "--tree", help="a folder holding another trex_eval package, measured in alternate rounds"
    )
    options = parser.parse_args()
    trees: list[str | None] = [None] + ([options.tree] if options.tree else [])
    with tempfile.TemporaryDirectory(prefix="trex-bench-startup-") as scratch:
        for name in options.commands:
            rounds: dict[str | None, list[Round]] = {tree: [] for tree in trees}
            for index in range(options.rounds):
                for tree in trees:
                    out = Path(scratch) / f"{name}-{index}-{len(rounds[tree])}-{id(tree)}"
                    try:
                        rounds[tree].append(measure(COMMANDS[name](out), tree=tree))
                    except RuntimeError as error:
                        print(error, file=sys.stderr)
                        return 1
            for tree, measured in rounds.items():
                label = "this tree" if tree is None else tree
                scope = "process tree" if all(r.whole_tree for r in measured) else "reaped children only"
                print(
                    f"{name:6} {label}: best of {len(measured)}: {min(r.cpu for r in measured):.2f} CPU s "
                    f"({scope}), {min(r.wall for r in measured):.2f} wall s; "
                    f"all CPU s: {' '.join(f'{r.cpu:.2f}' for r in measured)}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
