"""The HTML leaderboard of mixed runs: one table per rule group (the runs whose benchmarks were
graded under the same rules and variants), the macro column right after the run's name. Tested on
real runs: the reference run re-graded by ``trex-eval grade --rule strict --rule rel:1e-6`` (one
run directory per rule), beside the trex-compat run."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.report import leaderboard_from_dirs

FIXED_HEAD = ["Rank", "Model"]
FIXED_TAIL = ["Protocol", "Prompt set", "Samples"]


class _Tables(HTMLParser):
    """Each ``table.leaderboard``: its header cells and rows of cells (text, whitespace folded),
    and the rule-group headings."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.headings: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table" and "leaderboard" in classes:
            self.tables.append([])
            self._depth = 1
        elif tag == "tr" and self._depth:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self._depth:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")
        elif tag == "h3" and "rule-group" in classes:
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth = 0
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "h3" and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading.append(data)


def _tables(path: Path) -> _Tables:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def regraded(reference_dir: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("regraded")
    trex_eval(
        "grade", str(reference_dir), "--rule", "strict", "--rule", "rel:1e-6",
        "-o", str(out), "--no-progress", "--data-dir", str(data_dir),
    )  # fmt: skip
    runs = sorted(path for path in out.iterdir() if (path / "manifest.json").is_file())
    assert len(runs) == 2
    return runs


def test_one_table_per_rule_group_macro_first(
    reference_dir: Path, compat_dir: Path, regraded: list[Path], tmp_path: Path
) -> None:
    dirs = [reference_dir, compat_dir, *regraded]
    html = tmp_path / "board.html"
    trex_eval("leaderboard", *map(str, dirs), "--html", str(html), "--out", str(tmp_path / "b.csv"))
    board = leaderboard_from_dirs(dirs)
    # reference and its strict re-grade share the rules; rel:1e-6 and trex-compat differ
    assert len(board.macro_columns) == 3
    page = _tables(html)
    assert len(page.tables) == len(board.macro_columns) == len(page.headings)
    for macro, table, heading in zip(board.macro_columns, page.tables, page.headings, strict=True):
        header, *rows = table
        assert header[:3] == [*FIXED_HEAD, f"{macro.label} macro mean"]
        assert header[3:-3] == [
            f"{column.benchmark} {column.rule} · data {column.dataset_sha256[:8]}"
            for column in board.columns
            if column.label in macro.over
        ]
        assert header[-3:] == FIXED_TAIL
        members = [row for row in board.rows if row.macro_column == macro.label]
        assert [cells[1] for cells in rows] == [row.label for row in members]
        assert [cells[0] for cells in rows] == [str(rank) for rank in range(1, len(members) + 1)]
        for cells, row in zip(rows, members, strict=True):
            assert len(cells) == len(header)
            assert "–" not in cells  # a group's table has no empty cells
            assert cells[2].startswith(f"{row.summary.macro_pass_at_1 * 100:.2f}")
        assert heading.startswith(f"{macro.label} · rules ")
        assert all(column.rule in heading for column in board.columns if column.label in macro.over)
    # as narrow as one rule set: 4 benchmarks, not 4 x 3 column groups
    assert max(len(table[0]) for table in page.tables) == len(FIXED_HEAD) + 1 + 4 + len(FIXED_TAIL)


def test_a_board_of_one_rule_group_has_one_table_and_no_heading(
    reference_dir: Path, regraded: list[Path], tmp_path: Path
) -> None:
    strict = next(path for path in regraded if path.name.startswith("strict"))
    html = tmp_path / "board.html"
    trex_eval(
        "leaderboard", str(reference_dir), str(strict), "--html", str(html), "--out", str(tmp_path / "b.csv")
    )
    page = _tables(html)
    assert len(page.tables) == 1 and page.headings == []
    header, *rows = page.tables[0]
    assert header[2] == "macro macro mean" and len(rows) == 2
