"""`trex-eval benchmarks diff A B` against SIRL's own change log.

SIRL's ``test_data/README.md`` (Cardinal-Operations/SIRL at the pinned commit, read here from
../shared/benchmarks) lists, per MAMO dataset, the removed, revised and answer-corrected problems
(0-based rows of the original files) and a table of old and new answers. Every expectation below
is read from that file; only the disagreements this harness found (documented in
benchmarks/notes/field-benchmarks.md) are written out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.data import source_dir
from trex_eval.benchmarks.diff import BenchmarkDiff, diff
from trex_eval.records import ObjectiveReference, Problem

NOTES = Path(__file__).resolve().parents[2] / "benchmarks" / "notes" / "field-benchmarks.md"


@dataclass(frozen=True)
class ChangeLog:
    """One dataset's section of SIRL's change log."""

    before: int
    after: int
    removed: tuple[int, ...]
    revised: tuple[int, ...]
    corrected: tuple[int, ...]
    answers: dict[int, tuple[str, str]]
    """Row -> (original answer, correct answer), from the log's tables."""


def _change_log(data_dir: Path, dataset: str) -> ChangeLog:
    text = (source_dir("Cardinal-Operations/SIRL", data_dir) / "test_data" / "README.md").read_text("utf-8")
    sizes = re.search(rf"^\|\s*{dataset}\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|", text, re.M)
    assert sizes is not None
    start = text.index(f"## Correction of the {dataset} Dataset")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end > 0 else None]
    kinds = {
        m.group(1): tuple(int(x) for x in m.group(2).split(","))
        for m in re.finditer(
            r"^\|\s*(Removed|Question Revision|Answer Correction)\s*\|([\d ,]+)\|", section, re.M
        )
    }
    answers = {
        int(m.group(1)): (m.group(2), m.group(3))
        for m in re.finditer(r"^\|\s*(\d+)\s*\|\s*(-?[\d.]+)\s*\|\s*(-?[\d.]+)\s*\|", section, re.M)
    }
    return ChangeLog(
        before=int(sizes.group(1)),
        after=int(sizes.group(2)),
        removed=kinds["Removed"],
        revised=kinds["Question Revision"],
        corrected=kinds["Answer Correction"],
        answers=answers,
    )


def _label(problem: Problem) -> float:
    """The label as written (a sentinel's text too: the log writes -9999 as a number)."""
    assert isinstance(problem.reference, ObjectiveReference)
    return float(problem.reference.label)


def _diff(a: str, b: str, data_dir: Path) -> BenchmarkDiff:
    return diff(load_benchmark(a, data_dir=data_dir), load_benchmark(b, data_dir=data_dir))


def _count_row(counts: dict[str, int]) -> str:
    return "| " + " | ".join(str(counts[key]) for key in counts) + " |"


def test_complexlp_diff_agrees_exactly_with_sirls_change_log(data_dir: Path) -> None:
    log = _change_log(data_dir, "MAMO_ComplexLP")
    assert set(log.answers) == set(log.corrected)  # the log's tables cover its list
    result = _diff("mamo-complexlp", "mamo-complexlp@sirl-fixed", data_dir)
    assert [p.index for p in result.removed] == list(log.removed) and not result.added
    assert [p.a.index for p in result.reworded] == list(log.revised)
    # Every corrected answer is relabelled, and so are the two revised questions (new answers).
    relabelled = {p.a.index: p for p in result.relabelled}
    assert sorted(relabelled) == sorted({*log.corrected, *log.revised})
    for row, (old, new) in log.answers.items():
        pair = relabelled[row]
        assert math.isclose(_label(pair.a), float(old)) and math.isclose(_label(pair.b), float(new)), row
    counts = result.counts()
    assert (counts["a"], counts["b"]) == (log.before, log.after)
    assert counts["unchanged"] == log.after - len(relabelled)


def test_easylp_diff_agrees_with_sirls_change_log_but_for_documented_rows(data_dir: Path) -> None:
    log = _change_log(data_dir, "MAMO_EasyLP")
    assert set(log.answers) == set(log.corrected)
    result = _diff("mamo-easylp", "mamo-easylp@sirl-fixed", data_dir)
    counts = result.counts()
    assert (counts["a"], counts["b"]) == (log.before, log.after)
    # Row 2 was rewritten beyond recognition and moved to the end of SIRL's file: removed here,
    # added there, with the new answer the log gives it.
    assert [p.index for p in result.removed] == sorted([*log.removed, 2])
    assert [_label(p) for p in result.added] == [float(log.answers[2][1])]
    reworded = {p.a.index for p in result.reworded}
    assert set(log.revised) <= reworded
    assert reworded - set(log.revised) == {222, 435, 598, 605, 606, 630, 638}  # unlogged edits
    relabelled = {p.a.index: p for p in result.relabelled}
    assert set(relabelled) - set(log.corrected) == {13, 50, 68, 221}  # unlogged relabels
    assert set(log.corrected) - set(relabelled) == {2, 35}  # 2: above; 35: logged, not applied
    wrong_old = {
        row
        for row, (old, new) in log.answers.items()
        if row in relabelled and not math.isclose(_label(relabelled[row].a), float(old))
    }
    assert wrong_old == {638}  # the log's "original" 2000000 is row 648's; the file says 19500
    assert all(
        math.isclose(_label(relabelled[row].b), float(new))
        for row, (_, new) in log.answers.items()
        if row in relabelled
    )


@pytest.mark.parametrize(
    ("a", "b", "dataset"),
    [
        ("mamo-complexlp", "mamo-complexlp@sirl-fixed", "MAMO_ComplexLP"),
        ("mamo-easylp", "mamo-easylp@sirl-fixed", "MAMO_EasyLP"),
    ],
)
def test_cli_output_is_the_one_in_the_notes(a: str, b: str, dataset: str, data_dir: Path) -> None:
    done = trex_eval("benchmarks", "diff", a, b, env={"TREX_DATA_DIR": str(data_dir)}, expect=1)
    log = _change_log(data_dir, dataset)
    counts = _diff(a, b, data_dir).counts()
    assert (counts["a"], counts["b"]) == (log.before, log.after)
    assert _count_row(counts) in done.stdout
    assert f"## removed (only in {a}): {counts['removed']}" in done.stdout
    # The notes quote the whole output, so a change in the data or the engine shows there.
    assert f"```\n$ trex-eval benchmarks diff {a} {b}\n{done.stdout}```" in NOTES.read_text("utf-8")


def test_show_limits_each_list(data_dir: Path) -> None:
    done = trex_eval(
        "benchmarks",
        "diff",
        "mamo-complexlp",
        "mamo-complexlp@sirl-fixed",
        "--show",
        "2",
        env={"TREX_DATA_DIR": str(data_dir)},
        expect=1,
    )
    log = _change_log(data_dir, "MAMO_ComplexLP")
    relabelled = len({*log.corrected, *log.revised})
    assert f"## relabelled: {relabelled}\n" in done.stdout
    assert f"- ... and {relabelled - 2} more" in done.stdout
    assert f"- ... and {len(log.removed) - 2} more" in done.stdout
    section = done.stdout.split("## relabelled")[1]
    assert sum(1 for line in section.splitlines() if line.startswith("- ") and "->" in line) == 2


def test_identical_versions_exit_0(data_dir: Path) -> None:
    done = trex_eval("benchmarks", "diff", "nl4opt-245", "nl4opt-245", env={"TREX_DATA_DIR": str(data_dir)})
    n = len(load_benchmark("nl4opt-245", data_dir=data_dir))
    assert f"| {n} | {n} | {n} | {n} | 0 | 0 | 0 | 0 |" in done.stdout


def test_an_unknown_name_exits_2_with_a_guess(data_dir: Path) -> None:
    done = trex_eval(
        "benchmarks",
        "diff",
        "mamo-complexlp",
        "mamo-complexlp@sirl-fixd",
        columns=250,
        env={"TREX_DATA_DIR": str(data_dir)},
        expect=2,
    )
    assert (
        "unknown benchmark 'mamo-complexlp@sirl-fixd' (did you mean 'mamo-complexlp@sirl-fixed'"
        in done.stderr
    )
    assert "Traceback" not in done.stderr and not done.stdout
