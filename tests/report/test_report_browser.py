"""The HTML report in a real browser: headless Debian Chromium loads it from disk, renders it
without console errors or network requests, draws the charts, runs the drill-down filter, and
takes a laptop-sized screenshot. A second page adds a run with a long run id (what ``-o`` names
it), in a 1400-px window: every element id is unique, no table is wider than the page (none needs
its horizontal scroll bar), and every chart label is shown whole inside its chart.
``TREX_REPORT_SCREENSHOTS=DIR`` keeps the PNGs for a look."""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pipeline_runs as pr
import pytest
from chromium import HeadlessChromium, chromium_executable
from html_blobs import read_page

from trex_eval.report import RunResults, load_published, load_run, shipped_published_csv, write_html_report

pytestmark = pytest.mark.browser

WINDOW = (1366, 900)
WIDE_WINDOW = (1400, 900)
LONG_RUN_ID = "qwen2.5-coder-1.5b-instruct-q4-trex-compat-20261207-041500-9f3a"


@pytest.fixture(scope="module")
def browser() -> Iterator[HeadlessChromium]:
    if chromium_executable() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with HeadlessChromium(window=WINDOW) as instance:
        yield instance


@pytest.fixture(scope="module")
def page(
    browser: HeadlessChromium,
    broken: RunResults,
    reference: RunResults,
    compat_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    published = shipped_published_csv()
    assert published is not None
    write_html_report(
        path, [broken, reference, load_run(compat_dir)], baseline=0, published=load_published(published)
    )
    browser.load(path.as_uri())
    return path


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_loads_cleanly_and_offline(browser: HeadlessChromium, page: Path) -> None:
    assert browser.errors() == []
    assert browser.requested_urls() == [page.as_uri()]
    assert browser.evaluate("document.title") == "trex-eval report"


def test_charts_are_drawn(browser: HeadlessChromium, page: Path) -> None:
    counts = browser.evaluate(
        "({bars: document.querySelectorAll('svg.chart-bars').length,"
        " delta: document.querySelectorAll('svg.chart-delta').length,"
        " stack: document.querySelectorAll('svg.chart-stack').length,"
        " rects: document.querySelectorAll('svg.chart rect.bar').length,"
        " whiskers: document.querySelectorAll('svg.chart g.ci').length,"
        " drawn: [...document.querySelectorAll('svg.chart')].every(svg => svg.getBBox().width > 100)})"
    )
    # 4 benchmarks split by rule (compat run) into 8 column groups, plus two macro columns
    assert counts["bars"] == 2 * len(pr.BENCHMARKS) + 2
    assert counts["delta"] == 2  # reference and compat, each against broken
    assert counts["stack"] == 1
    assert counts["rects"] > 0 and counts["whiskers"] == counts["rects"]
    assert counts["drawn"] is True


def test_fits_a_laptop_screen(browser: HeadlessChromium, page: Path) -> None:
    # wide tables scroll inside their own box; the page itself never scrolls sideways
    assert browser.evaluate("document.documentElement.scrollWidth") <= WINDOW[0]
    png = browser.screenshot()
    assert _png_size(png) == WINDOW
    keep = os.environ.get("TREX_REPORT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "report-viewport.png").write_bytes(png)
        (Path(keep) / "report-full.png").write_bytes(browser.screenshot(full_page=True))


def test_drilldown_filter_runs(browser: HeadlessChromium, page: Path) -> None:
    visible = (
        "[...document.querySelectorAll('section.bench-problems[data-benchmark=\"nl4opt\"] details.problem')]"
        ".filter(problem => !problem.hidden).length"
    )
    assert browser.evaluate(visible) == pr.LIMIT
    browser.evaluate(
        'document.querySelector(\'section.bench-problems[data-benchmark="nl4opt"] '
        'button[data-filter="disagree"]\').click()'
    )
    assert browser.evaluate(visible) == len(pr.BREAKAGES["nl4opt"])
    assert browser.errors() == []


def test_opened_problems_show_the_stored_texts(browser: HeadlessChromium, page: Path) -> None:
    # the page decompresses the benchmark's blob (DecompressionStream) when a problem is opened
    section = 'section.bench-problems[data-benchmark="b4o-orgeval"]'
    browser.evaluate(f"document.querySelectorAll('{section} details.problem').forEach(p => p.open = true)")
    shown = f"[...document.querySelectorAll('{section} .problem-body pre')].map(pre => pre.textContent)"
    deadline = time.monotonic() + 20
    while not browser.evaluate(shown) and time.monotonic() < deadline:
        time.sleep(0.1)
    expected = [
        text
        for problem in read_page(page.read_text(encoding="utf-8"))["b4o-orgeval"].problems.values()
        for _, text in problem.texts
    ]
    assert browser.evaluate(shown) == expected and len(expected) > pr.LIMIT
    assert "ValueError: deliberately broken" in browser.evaluate(
        f"document.querySelector('{section}').textContent"
    )
    assert browser.errors() == []


def test_a_problem_id_in_a_transition_table_opens_its_drill_down(
    browser: HeadlessChromium, page: Path
) -> None:
    opened = browser.evaluate(
        """(() => {
          var link = document.querySelector("a.jump");
          if (!link) return null;
          link.click();
          var section = [...document.querySelectorAll(".bench-problems")]
            .find((s) => s.dataset.benchmark === link.dataset.bench);
          var problem = [...section.querySelectorAll("details.problem")]
            .find((p) => p.querySelector(".pid").textContent === link.dataset.pid);
          return [link.dataset.pid, problem.open, !problem.hidden, section.closest("details.bench").open];
        })()"""
    )
    assert opened is not None, "the report shows no transition with problem ids"
    assert opened[1:] == [True, True, True], opened
    time.sleep(0.5)
    assert browser.errors() == []


@pytest.fixture(scope="module")
def long_id_page(
    broken: RunResults,
    reference: RunResults,
    compat_dir: Path,
    runs_root: Path,
    data_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HeadlessChromium]:
    if chromium_executable() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    # Displayed like compat_dir's run ("reference · trex-compat"): both labels carry the run id.
    long_dir = pr.reference_run(runs_root / LONG_RUN_ID, data_dir, protocol="trex-compat")
    path = tmp_path_factory.mktemp("html-long") / "report.html"
    write_html_report(path, [broken, reference, load_run(compat_dir), load_run(long_dir)], baseline=0)
    with HeadlessChromium(window=WIDE_WINDOW) as instance:
        instance.load(path.as_uri())
        yield instance


def test_every_element_id_is_unique(
    browser: HeadlessChromium, page: Path, long_id_page: HeadlessChromium
) -> None:
    repeated = """(() => { const seen = {};
      document.querySelectorAll("[id]").forEach((node) => { seen[node.id] = (seen[node.id] || 0) + 1; });
      return Object.keys(seen).filter((id) => seen[id] > 1); })()"""
    for shown in (browser, long_id_page):
        assert shown.evaluate(repeated) == []
        assert shown.evaluate("document.querySelectorAll('[id]').length") > 10


def test_no_table_needs_a_horizontal_scroll_bar_at_1400_px(long_id_page: HeadlessChromium) -> None:
    too_wide = long_id_page.evaluate(
        """[...document.querySelectorAll("table")]
          .filter((table) => table.scrollWidth > table.parentElement.clientWidth)
          .map((table) => [table.closest("section").id, table.scrollWidth,
                           table.parentElement.clientWidth])"""
    )
    assert too_wide == []
    assert long_id_page.evaluate("document.documentElement.scrollWidth") <= WIDE_WINDOW[0]
    # The long id is in the leaderboard, whole (wrapped inside its cell, not cut).
    models = long_id_page.evaluate(
        "[...document.querySelectorAll('table.leaderboard td.model')].map((cell) => cell.textContent)"
    )
    assert any(LONG_RUN_ID in model for model in models), models
    keep = os.environ.get("TREX_REPORT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "report-long-ids-full.png").write_bytes(long_id_page.screenshot(full_page=True))


def test_chart_labels_are_shown_whole_inside_their_charts(long_id_page: HeadlessChromium) -> None:
    labels = long_id_page.evaluate(
        """[...document.querySelectorAll("svg.chart text.label")].map((text) => {
          const box = text.getBBox();
          const shown = [...text.querySelectorAll("tspan")].map((span) => span.textContent).join("");
          return {label: text.querySelector("title").textContent, shown: shown, left: box.x,
                  right: box.x + box.width, labelColumn: text.querySelector("tspan").x.baseVal[0].value};
        })"""
    )
    assert any(LONG_RUN_ID in label["label"] for label in labels)
    for label in labels:
        assert label["shown"] == label["label"], label  # nothing cut off or replaced by an ellipsis
        assert label["left"] >= 0 and label["right"] <= label["labelColumn"] + 1, label  # not clipped
