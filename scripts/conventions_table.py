"""What each execution convention moves: recorded runs re-graded under each protocol, as a table.

    python scripts/conventions_table.py RUN [RUN ...] [--protocol P ...] [--out DIR] [--workers N]

Each run directory (``trex-eval run`` of any model, finished) is re-graded once per protocol text
by the real command line, ``trex-eval grade RUN --protocol P --out OUT/<run>/<n> --no-progress
--no-diagnose``, and every re-grade is compared sample by sample with the re-grade under the first
protocol (the baseline; by default the run's own protocol, graded the same way so that only the
protocol differs). The programs run again only where a protocol changes them (``preload``, another
extractor or job); the other options reuse the stored executions.

Prints one markdown table (model, benchmark and its version, samples, the protocol's canonical
text, the rule with its version, pass@1, samples that pass only under the protocol, samples that
pass only under the baseline, samples whose verdict changed at all) followed by the command lines
and the moved samples, so that the table in docs/protocols.md can be derived again. Without
``--protocol`` it uses :data:`DEFAULT_OPTIONS` on the run's own base protocol and the peer
protocols in :data:`PEER_PROTOCOLS`.

Exit status: 0 printed; 2 a run directory is missing or unfinished, or a re-grade failed (its
command line and output are printed: fix what it says and run again).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trex_eval.records import SampleRecord, Verdict
from trex_eval.store import MANIFEST, RunStore

DEFAULT_OPTIONS: tuple[str, ...] = (
    "",
    "+after-solve",
    "+preload=pulp",
    "+zero-band=0.05",
    "+no-best-solution",
    "+rule=rel:0.05",
    "+rule=rel:0.05+preload=pulp+after-solve+zero-band=0.05+no-best-solution",
)
"""Each convention alone on the run's own base protocol, then the third peer's harness of issue 45
composed in one text (the empty option is the baseline)."""

PEER_PROTOCOLS: tuple[str, ...] = ("orlm", "orlm+after-solve", "trex-compat")
"""The registered peer protocols, graded as they stand and with a convention."""

Key = tuple[str, str, int]
"""(benchmark, problem id, sample index): one sample of a run."""


@dataclass(frozen=True)
class Graded:
    """One run re-graded under one protocol: what its manifest and samples say.

    ``protocol`` is the canonical text the manifest records; ``benchmarks`` maps each benchmark
    to ``name@version`` of its data and ``rules`` to its rule spec; ``passed`` and ``verdicts``
    are keyed by sample, without the samples graded ``missing`` (no completion recorded: a run
    stopped before it generated them), which ``missing`` counts; ``command`` is the command line
    that produced it.
    """

    model: str
    protocol: str
    benchmarks: dict[str, str]
    rules: dict[str, str]
    passed: dict[Key, bool]
    verdicts: dict[Key, str]
    missing: int
    command: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """One line of the table: ``graded`` on ``benchmark`` compared with ``baseline``.

    ``gained`` are the samples that pass only under ``graded``, ``lost`` those that pass only
    under the baseline, ``changed`` the number whose verdict differs in any way, and
    ``transitions`` how many went from each baseline verdict to each other (``runtime_error ->
    wrong``), most frequent first.
    """

    benchmark: str
    graded: Graded
    samples: int
    pass_at_1: float
    gained: tuple[Key, ...]
    lost: tuple[Key, ...]
    changed: int
    transitions: tuple[tuple[str, int], ...] = ()


def protocols_for(base: str, *, peers: bool = True) -> list[str]:
    """The default protocol texts for a run whose own protocol is ``base``: the baseline first,
    each option of :data:`DEFAULT_OPTIONS` on it, then :data:`PEER_PROTOCOLS` (``peers``)."""
    texts = [base + option for option in DEFAULT_OPTIONS]
    if peers:
        texts += [peer for peer in PEER_PROTOCOLS if peer not in texts]
    return texts


def run_protocol(run: Path, *, base: str) -> str:
    """The base protocol a finished run was graded under (its manifest's ``settings.protocol``,
    without options: a run already graded with conventions is refused).

    Raises:
        SystemExit: ``run`` holds no manifest, or was graded with convention options.
    """
    if not (run / MANIFEST).is_file():
        raise SystemExit(f"{run} is not a run directory (no {MANIFEST}): pass the --out of a trex-eval run")
    protocol = RunStore(run).read_manifest().settings.protocol
    if "+" in protocol and not base:
        raise SystemExit(
            f"{run} was graded under {protocol!r}, which already holds options: pass --base with the "
            "protocol to compare against"
        )
    return base or protocol


def regrade(run: Path, protocol: str, *, out: Path, workers: int) -> Graded:
    """Grade ``run`` under ``protocol`` into ``out`` with ``trex-eval grade`` and read it back. A
    finished re-grade already in ``out`` is read as it stands (an interrupted table resumes); an
    unfinished one makes ``trex-eval grade`` refuse the directory (remove it and run again).

    Raises:
        SystemExit: the re-grade exited non-zero (its output is printed to stderr).
    """
    command = (
        "trex-eval", "grade", str(run), "--protocol", protocol, "--out", str(out),
        "--workers", str(workers), "--no-progress", "--no-diagnose",
    )  # fmt: skip
    if not (out / MANIFEST).is_file() or RunStore(out).read_manifest().finished_at is None:
        argv = [sys.executable, "-m", "trex_eval", *command[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"`{' '.join(command)}` exited {done.returncode}: see its output above")
    return read_graded(out, command=command)


def read_graded(out: Path, *, command: tuple[str, ...] = ()) -> Graded:
    """What the run directory ``out`` holds: its model, canonical protocol text, benchmark
    versions, rules, and each sample's verdict (a sample without a completion is left out, and
    counted)."""
    store = RunStore(out)
    settings = store.read_manifest().settings
    every: list[SampleRecord] = list(store.iter_samples())
    samples = [s for s in every if s.grade.verdict is not Verdict.MISSING]
    keys = [(s.benchmark, s.problem_id, s.sample_index) for s in samples]
    return Graded(
        model=settings.model.name,
        protocol=settings.protocol,
        benchmarks={b.name: f"{b.name}@{b.version}" for b in settings.benchmarks},
        rules={b.name: b.rule or "-" for b in settings.benchmarks},
        passed={key: s.grade.passed for key, s in zip(keys, samples, strict=True)},
        verdicts={key: s.grade.verdict.value for key, s in zip(keys, samples, strict=True)},
        missing=len(every) - len(samples),
        command=command,
    )


def compare(graded: Graded, baseline: Graded) -> list[Row]:
    """One :class:`Row` per benchmark of ``graded``, its samples paired with ``baseline``'s.

    Raises:
        SystemExit: the two hold different samples (not re-grades of one run).
    """
    if graded.passed.keys() != baseline.passed.keys():
        raise SystemExit(
            f"{graded.protocol!r} and {baseline.protocol!r} graded different samples: "
            "compare re-grades of one run directory"
        )
    rows = []
    for benchmark in graded.benchmarks:
        keys = sorted(k for k in graded.passed if k[0] == benchmark)
        rows.append(
            Row(
                benchmark=benchmark,
                graded=graded,
                samples=len(keys),
                pass_at_1=sum(graded.passed[k] for k in keys) / len(keys) if keys else 0.0,
                gained=tuple(k for k in keys if graded.passed[k] and not baseline.passed[k]),
                lost=tuple(k for k in keys if baseline.passed[k] and not graded.passed[k]),
                changed=sum(graded.verdicts[k] != baseline.verdicts[k] for k in keys),
                transitions=tuple(
                    Counter(
                        f"{baseline.verdicts[k]} -> {graded.verdicts[k]}"
                        for k in keys
                        if graded.verdicts[k] != baseline.verdicts[k]
                    ).most_common()
                ),
            )
        )
    return rows


def markdown(rows: Sequence[Row]) -> str:
    """The table, then each protocol's command line, then the moved samples (``problem id`` or
    ``id#sample`` where a run holds several samples per problem) and the verdict changes."""
    lines = [
        "| model | benchmark | n | protocol (canonical) | rule | pass@1 | +pass | −pass | verdicts changed |",
        "|---|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        g = row.graded
        lines.append(
            f"| {g.model} | {g.benchmarks[row.benchmark]} | {row.samples} | `{g.protocol}` | "
            f"`{g.rules[row.benchmark]}` | {100 * row.pass_at_1:.1f} % | {len(row.gained)} | "
            f"{len(row.lost)} | {row.changed} |"
        )
    for model, missing in {row.graded.model: row.graded.missing for row in rows}.items():
        if missing:
            lines += [
                "",
                f"{model}: {missing} samples without a completion (a run stopped early) are left out of n.",
            ]
    lines += ["", "Commands (the baseline is each model's first line):", ""]
    seen: list[tuple[str, ...]] = []
    for row in rows:
        if row.graded.command and row.graded.command not in seen:
            seen.append(row.graded.command)
            lines.append(f"    {' '.join(_quoted(part) for part in row.graded.command)}")
    moved = [row for row in rows if row.changed]
    if moved:
        lines += ["", "Moved samples (passes gained and lost; verdicts changed):", ""]
        for row in moved:
            changes = ", ".join(f"{text} ×{count}" for text, count in row.transitions)
            lines.append(
                f"- {row.graded.model}, {row.benchmark}, `{row.graded.protocol}`: "
                f"+[{_ids(row.gained)}] −[{_ids(row.lost)}]; {changes}"
            )
    return "\n".join(lines) + "\n"


def _ids(keys: Sequence[Key]) -> str:
    return ", ".join(pid if index == 0 else f"{pid}#{index}" for _, pid, index in keys)


def _quoted(part: str) -> str:
    return part if part and all(c.isalnum() or c in "-_./:=@+," for c in part) else json.dumps(part)


def table(runs: Sequence[Path], *, protocols: Sequence[str], base: str, out: Path, workers: int) -> list[Row]:
    """Every run re-graded under every protocol (``protocols`` empty: :func:`protocols_for` its
    own), compared with its first; re-grades go to ``out/<run name>/<index>``."""
    rows: list[Row] = []
    for run in runs:
        texts = list(protocols) or protocols_for(run_protocol(run, base=base))
        graded = [
            regrade(run, text, out=out / run.name / f"{index:02d}", workers=workers)
            for index, text in enumerate(texts)
        ]
        for each in graded:
            rows += compare(each, graded[0])
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished run directories")
    parser.add_argument(
        "--protocol", action="append", default=[], help="protocol text, repeatable; the first is the baseline"
    )
    parser.add_argument(
        "--base", default="", help="base protocol of the default list (default: the run's own)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("results/conventions-table"), help="re-grades go here"
    )
    parser.add_argument("--workers", type=int, default=2, help="programs executed at once per re-grade")
    args = parser.parse_args(argv)
    rows = table(args.runs, protocols=args.protocol, base=args.base, out=args.out, workers=args.workers)
    sys.stdout.write(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
