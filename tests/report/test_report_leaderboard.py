"""Leaderboards over pipeline-made runs: CSV through pandas, the split-never-mix policy for other
rules and data versions, sorting, and the separate table of reported numbers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pipeline_runs as pr
import pytest
from cli_process import trex_eval
from records_factory import entry, manifest, sample

from trex_eval.errors import ConfigError, StoreError
from trex_eval.records import DiagnosisCategory
from trex_eval.report import (
    IntervalSettings,
    Leaderboard,
    RunResults,
    build_leaderboard,
    leaderboard_frame,
    leaderboard_from_dirs,
    load_published,
    load_run,
    render_leaderboard_markdown,
    summarize,
    summarize_results,
    write_leaderboard_csv,
)
from trex_eval.report.summary import BenchmarkSummary, percent

REPO = Path(__file__).resolve().parents[2]


def _cells(frame: pd.DataFrame) -> list[list[object]]:
    """Every cell as a plain value, missing as None (CSV cannot tell an empty column's type)."""
    return [[None if pd.isna(value) else value for value in row] for row in frame.itertuples(index=False)]


@pytest.fixture(scope="module")
def board(reference_dir: Path, broken_dir: Path) -> Leaderboard:
    return leaderboard_from_dirs([broken_dir, reference_dir])


@pytest.fixture(scope="module")
def mixed(reference_dir: Path, broken_dir: Path, compat_dir: Path) -> Leaderboard:
    return leaderboard_from_dirs([compat_dir, broken_dir, reference_dir])


class TestTable:
    def test_rows_are_sorted_best_first(self, board: Leaderboard) -> None:
        assert [(row.rank, row.summary.run.model) for row in board.rows] == [(1, "reference"), (2, "broken")]
        assert [column.label for column in board.columns] == sorted(pr.BENCHMARKS)
        assert [macro.label for macro in board.macro_columns] == ["macro"]
        assert board.warnings == (
            "broken: optibench: 1 sample(s) failed because of the environment (licence "
            "error, gurobipy unavailable, a solver library missing from the install, not run); "
            "they count as failures but say nothing "
            "about the model",
        )

    def test_csv_round_trips_through_pandas(self, board: Leaderboard, tmp_path: Path) -> None:
        path = tmp_path / "out" / "leaderboard.csv"
        write_leaderboard_csv(board, path)
        read = pd.read_csv(path)
        frame = leaderboard_frame(board)
        assert list(read.columns) == list(frame.columns)
        assert _cells(read) == _cells(frame)
        assert read["rank"].dtype.kind == "i" and read["nl4opt.pass@1_pct"].dtype.kind == "f"
        broken = read[read["model"] == "broken"].iloc[0]
        for name in pr.BENCHMARKS:
            expected = (pr.LIMIT - len(pr.BREAKAGES[name])) / pr.LIMIT * 100
            assert broken[f"{name}.pass@1_pct"] == pytest.approx(expected)
            assert broken[f"{name}.n"] == pr.LIMIT
            assert broken[f"{name}.ci95_low_pct"] <= expected <= broken[f"{name}.ci95_high_pct"]
        assert broken["optibench.environment_failures"] == 1
        assert broken["nl4opt.api_errors"] == 1
        assert broken["macro.pass@1_pct"] == pytest.approx(70.0)  # (30 + 80 + 90 + 80) / 4
        assert broken["macro.over"] == "+".join(sorted(pr.BENCHMARKS))

    def test_column_names_are_stable(self, board: Leaderboard, reference: RunResults) -> None:
        columns = list(leaderboard_frame(board).columns)
        run_columns = [
            "rank",
            "macro_column",
            "run_id",
            "model",
            "label",
            "backend",
            "served_model",
            "protocol",
            "prompt_set",
            "few_shot",
            "samples",
            "limit",
            "created_at",
            "finished_at",
            "run_dir",
        ]
        fields = [
            "pass@1_pct",
            "ci95_low_pct",
            "ci95_high_pct",
            "n",
            "rule",
            "dataset_sha256",
            "template_sha256",
            "extractor",
            "api_errors",
            "environment_failures",
            "missing_samples",
            "unverified_samples",
            *(f"diagnosis.{category.value}" for category in DiagnosisCategory),
        ]
        groups = [f"{name}.{field}" for name in sorted(pr.BENCHMARKS) for field in fields]
        macro = [
            "macro.pass@1_pct",
            "macro.ci95_low_pct",
            "macro.ci95_high_pct",
            "macro.over",
            "macro.interval",
        ]
        assert columns == run_columns + groups + macro
        # the recorded identity is the manifest's, cell by cell
        frame = leaderboard_frame(board).set_index("model")
        broken = next(row.summary for row in board.rows if row.summary.run.model == "broken")
        assert any(bench.diagnoses for bench in broken.benchmarks)
        for bench in broken.benchmarks:  # the diagnosis columns are the summary's counts
            for category, count in bench.diagnoses.items():
                assert frame.loc["broken", f"{bench.benchmark}.diagnosis.{category}"] == count
        for bench in reference.manifest.settings.benchmarks:
            assert frame.loc["reference", f"{bench.name}.rule"] == bench.rule
            assert frame.loc["reference", f"{bench.name}.dataset_sha256"] == bench.sha256
            assert frame.loc["reference", f"{bench.name}.template_sha256"] == bench.template_sha256

    def test_markdown_cells_say_what_they_are(self, board: Leaderboard) -> None:
        markdown = render_leaderboard_markdown(board)
        assert "| 2 | broken | default | t-rex | 1 | 90.00* [" in markdown  # b4o-feasible; n=10: Wilson
        assert "n=10" in markdown and "80.00†*" in markdown and "Wilson score interval" in markdown
        assert "95% percentile bootstrap over problems (10000 resamples, seed 0)" in markdown
        for column in board.columns:
            assert (
                f"- **{column.label}**: {column.title} (v{column.version}); rule `{column.rule}`" in markdown
            )


class TestMixing:
    def test_other_rules_are_split_into_their_own_columns(self, mixed: Leaderboard, compat_dir: Path) -> None:
        compat_rules = {bench.name: bench.rule for bench in load_run(compat_dir).manifest.settings.benchmarks}
        labels = [column.label for column in mixed.columns]
        for name in pr.BENCHMARKS:
            mine = [column for column in mixed.columns if column.benchmark == name]
            if len({column.rule for column in mine}) > 1:
                assert f"{name}[{compat_rules[name]}]" in labels
        assert "nl4opt" not in labels  # split: no bare header could be misread
        split = [warning for warning in mixed.warnings if "is split into 2 columns" in warning]
        assert split and all("reference-compat" in warning for warning in split)
        for row in mixed.rows:
            for label in row.cells:
                column = next(column for column in mixed.columns if column.label == label)
                cell = row.cell(label)
                assert cell is not None and (cell.rule, cell.dataset_sha256) == (
                    column.rule,
                    column.dataset_sha256,
                )

    def test_macro_is_split_when_rows_cover_other_columns(self, mixed: Leaderboard) -> None:
        assert [macro.label for macro in mixed.macro_columns] == ["macro[1]", "macro[2]"]
        by_model = {row.summary.run.run_id: row for row in mixed.rows}
        assert by_model["reference"].macro_column == by_model["broken"].macro_column
        assert by_model["reference-compat"].macro_column != by_model["reference"].macro_column
        assert by_model["reference-compat"].rank == 1
        assert any("the macro average is split" in warning for warning in mixed.warnings)

    def test_other_data_versions_are_split(self) -> None:
        old = manifest("old", [entry("toy", problems=2, sha256="c" * 64)], model="m1")
        new = manifest("new", [entry("toy", problems=2, sha256="d" * 64)], model="m2")
        summaries = [summarize(old, [sample("toy", "1")]), summarize(new, [sample("toy", "2")])]
        board = build_leaderboard(summaries)
        assert [column.label for column in board.columns] == ["toy[data cccccccc]", "toy[data dddddddd]"]
        assert any("old" in warning and "new" in warning and "split" in warning for warning in board.warnings)

    def test_other_problem_selections_get_their_own_columns(self) -> None:
        small = manifest("small", [entry("toy", problems=2)], model="m1")
        large = manifest("large", [entry("toy", problems=3)], model="m2")
        board = build_leaderboard([summarize(small, []), summarize(large, [])])
        assert [column.label for column in board.columns] == ["toy[n=2]", "toy[n=3]"]
        assert any("small" in w and "large" in w and "problem selections" in w for w in board.warnings)

    def test_refusals(self, broken: RunResults) -> None:
        summary = summarize_results(broken)
        with pytest.raises(ConfigError, match="more than once"):
            build_leaderboard([summary, summary])
        other = summarize_results(broken, interval=IntervalSettings(seed=1))
        twin = other.model_copy(update={"run": other.run.model_copy(update={"run_id": "twin"})})
        with pytest.raises(ConfigError, match="different settings"):
            build_leaderboard([summary, twin])
        with pytest.raises(ConfigError):
            build_leaderboard([])

    def test_a_directory_that_is_not_a_run(self, tmp_path: Path) -> None:
        with pytest.raises(StoreError, match="unreadable run manifest"):
            leaderboard_from_dirs([tmp_path])


class TestReported:
    def test_published_rows_stay_in_their_own_table(self, board: Leaderboard) -> None:
        published = load_published(REPO / "results" / "published" / "published.csv")
        markdown = render_leaderboard_markdown(board, published=published)
        measured, reported = markdown.split("## Reported, not re-run")
        assert "DeepSeek-V4-Flash-OR" not in measured
        assert "| DeepSeek-V4-Flash-OR | average | 71.81 |" in reported
        assert "did not measure" in reported
        assert "DeepSeek" not in leaderboard_frame(board).to_csv()


def _marks(bench: BenchmarkSummary) -> str:
    return (
        ("†" if bench.environment_failures else "")
        + ("‡" if bench.missing_samples else "")
        + ("*" if bench.small_n else "")
    )


class TestTerminal:
    """`trex-eval leaderboard` prints one compact table: a section per run, a row per benchmark."""

    @staticmethod
    def _cli(columns: int, *runs: Path, tmp_path: Path) -> str:
        return trex_eval(
            "leaderboard", *map(str, runs), "--out", str(tmp_path / "b.csv"), columns=columns
        ).stdout

    def test_the_table_fits_80_columns_and_names_every_rank_group(
        self, reference_dir: Path, broken_dir: Path, compat_dir: Path, tmp_path: Path
    ) -> None:
        """Issue 16: a mixed board at 80 columns: one row per (run, benchmark), each run a section
        row saying its rank and, with split macro columns, which group that rank counts in."""
        text = self._cli(80, broken_dir, reference_dir, compat_dir, tmp_path=tmp_path)
        lines = text.splitlines()
        # Every line fits, but the path of the CSV written and the command that writes the details:
        # paths and commands are never split.
        whole = ("leaderboard CSV: ", "definitions and run details: ")
        assert max(len(line) for line in lines if not line.startswith(whole)) <= 80
        mixed = leaderboard_from_dirs([broken_dir, reference_dir, compat_dir])
        assert len(mixed.macro_columns) > 1
        over = {macro.label: "+".join(macro.over) for macro in mixed.macro_columns}
        squeezed = ["".join(line.split()) for line in lines]
        for row in mixed.rows:
            # The section row may fold over a few lines at 80 columns: compare without whitespace.
            wanted = "".join(f"#{row.rank} of runs over {over[row.macro_column or '']}  {row.label}".split())
            _, end = next(
                (i, i + k)
                for i in range(len(lines))
                for k in range(1, 12)
                if "".join(squeezed[i : i + k]) == wanted
            )
            block = lines[end : end + len(row.cells)]
            for label in row.cells:
                bench = row.cell(label)
                assert bench is not None
                assert any(
                    line.split()[:3] == [label, str(bench.problems), percent(bench.pass_at_1) + _marks(bench)]
                    for line in block
                ), (label, block)
        assert "definitions and run details: trex-eval leaderboard " in text
        assert (tmp_path / "b.csv").is_file()

    def test_filesystem_errors_read_as_sentences(self, reference_dir: Path, tmp_path: Path) -> None:
        """Issue 16: no raw `[Errno 20] Not a directory` texts; the path and what to do instead."""
        (tmp_path / "file").write_text("")
        failed = trex_eval(
            "leaderboard", str(reference_dir), "-o", str(tmp_path / "file" / "b.csv"), expect=2
        )
        assert "Errno" not in failed.stderr
        assert f"error: cannot use {tmp_path / 'file'}: file exists\n" in failed.stderr
        assert "-> a file of that name is in the way of a folder" in failed.stderr

    def test_printing_writes_no_file(self, reference_dir: Path, tmp_path: Path) -> None:
        """Issue 16: only --out/--html write (the CSV used to land in results/ uninvited)."""
        work = tmp_path / "work"
        work.mkdir()
        done = trex_eval("leaderboard", str(reference_dir), cwd=work, columns=80)
        assert "reference" in done.stdout and list(work.iterdir()) == []

    def test_a_glob_over_results_skips_what_is_not_a_run(self, reference_dir: Path, tmp_path: Path) -> None:
        """`trex-eval leaderboard results/*` in a clone also passes the shipped CSVs."""
        (tmp_path / "published.csv").write_text("model,benchmark\n")
        (tmp_path / "notes").mkdir()
        done = trex_eval(
            "leaderboard", str(reference_dir), str(tmp_path / "published.csv"), str(tmp_path / "notes"),
            "--out", str(tmp_path / "b.csv"), columns=200,
        )  # fmt: skip
        assert f"skipping {tmp_path / 'published.csv'}: not a run directory (a file)" in done.stderr
        assert f"skipping {tmp_path / 'notes'}: not a run directory (no manifest.json)" in done.stderr
        assert (tmp_path / "b.csv").is_file()
        refused = trex_eval("compare", str(tmp_path / "published.csv"), columns=200, expect=2)
        assert "none of the given paths is a run directory" in refused.stderr
