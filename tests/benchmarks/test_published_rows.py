"""The committed results/published/published.csv: the field's reported numbers (SIRL's table,
ORLM's README, MIPLIB-NL, T-Rex), each naming its benchmark version, rule and a source pinned to a
commit, and the report's "reported, not re-run" table showing them.

The SIRL figures are checked against ../shared/docs/field-benchmarks.md (read here), where they
were transcribed from SIRL's README at the pinned commit."""

from __future__ import annotations

import re
from pathlib import Path

from trex_eval.benchmarks import shipped_spec_paths
from trex_eval.benchmarks.data import load_manifest, load_sources
from trex_eval.grading import get_rule
from trex_eval.report.markdown import published_table
from trex_eval.report.published import PublishedScore, load_published

REPO = Path(__file__).resolve().parents[2]
FIELD_DOC = REPO.parent / "shared" / "docs" / "field-benchmarks.md"
SIRL_COLUMNS = (
    "nl4opt-245",
    "mamo-easylp@sirl-fixed",
    "mamo-complexlp@sirl-fixed",
    "industryor@sirl-fixedv2",
    "optmath-bench@sirl-166",
    "optibench-605@sirl",
    "average",
)


def _published() -> tuple[PublishedScore, ...]:
    return load_published(REPO / "results" / "published" / "published.csv")


def _sirl_table() -> dict[str, list[str]]:
    """Model -> its seven cells (``89.0*``: copied by SIRL from another paper), from the doc."""
    text = " ".join(FIELD_DOC.read_text("utf-8").split())
    start = text.index("macro: ") + len("macro: ")
    body = text[start : text.index("(Source: README.md of Cardinal-Operations/SIRL")]
    rows = {}
    for entry in body.split(";"):
        cells = entry.strip().rstrip(".").split()
        rows[" ".join(cells[:-7])] = cells[-7:]
    return rows


def test_every_row_names_a_version_a_known_rule_and_a_pinned_source() -> None:
    shipped = set(shipped_spec_paths())
    families = {name.partition("@")[0] for name in shipped}
    for score in _published():
        if score.benchmark.endswith("@unstated"):
            assert "not stated" in score.note, score
            assert score.benchmark.partition("@")[0] in families | {"bench4opt"}, score
        else:
            assert score.benchmark in shipped | {"average"}, score
        if score.rule:
            assert get_rule(score.rule).name == score.rule
        else:
            assert "not stated" in score.note or "metric not stated" in score.metric or "*" in score.note, (
                score
            )
        assert re.match(r"https://github\.com/[^/]+/[^/]+/blob/[0-9a-f]{40}/", score.url), score.url


def test_t_rex_rows_cite_the_pinned_commit() -> None:
    trex = [s for s in _published() if "SLAI-T-Rex" in s.url]
    assert len(trex) == 5
    assert all(f"/blob/{load_manifest().commit}/" in s.url for s in trex)
    assert not any("1464267" in s.url for s in _published())


def test_the_sirl_table_is_copied_cell_by_cell() -> None:
    table = _sirl_table()
    assert len(table) == 9
    pin = load_sources()["Cardinal-Operations/SIRL"].commit
    rows = {(s.model, s.benchmark): s for s in _published() if s.source.startswith("SIRL")}
    assert len(rows) == 9 * 7
    for model, cells in table.items():
        for benchmark, cell in zip(SIRL_COLUMNS, cells, strict=True):
            score = rows[(model, benchmark)]
            assert score.score_pct == float(cell.rstrip("*")), (model, benchmark)
            assert f"/blob/{pin}/" in score.url
            # SIRL's own measurements name its rule; copied (*) cells, and averages over them, do not.
            copied = cell.endswith("*") or (benchmark == "average" and any(c.endswith("*") for c in cells))
            assert (score.rule == "") is copied, (model, benchmark, score.rule)


def test_orlm_and_miplib_nl_rows() -> None:
    orlm = {s.benchmark: s for s in _published() if s.source == "ORLM README.md"}
    assert {b: s.score_pct for b, s in orlm.items()} == {
        "nl4opt-245": 85.7,
        "mamo-easylp": 82.3,
        "mamo-complexlp": 37.4,
        "industryor": 38.0,
    }
    assert {s.rule for s in orlm.values()} == {"orlm"}
    # The doc's MIPLIB-NL figures for GPT-5.1, each in the CSV.
    doc = " ".join(FIELD_DOC.read_text("utf-8").split())
    quoted = re.search(r"README table image\): e\.g\. GPT-5\.1 (.+?)\. T-Rex:", doc)
    assert quoted is not None
    figures = [float(x) for x in re.findall(r"\d+\.\d+", quoted.group(1))]
    miplib = [s for s in _published() if "MIPLIB-NL" in s.source]
    assert [s.score_pct for s in miplib] == figures and {s.model for s in miplib} == {"GPT-5.1"}


def test_the_reported_table_shows_version_and_rule() -> None:
    lines = published_table(_published())
    assert lines[0] == "## Reported, not re-run"
    header = next(line for line in lines if line.startswith("| Model"))
    assert "| Rule |" in header and "| Benchmark |" in header
    assert any(
        line.startswith("| SIRL-Qwen2.5-32B-Gurobi | mamo-complexlp@sirl-fixed | 61.10 |")
        and "| sirl |" in line
        for line in lines
    )
    assert any(
        line.startswith("| GPT-4 | nl4opt-245 | 89.00 |") and "| not stated |" in line for line in lines
    )
