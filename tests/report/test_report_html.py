"""The HTML report as a document: self-contained, with its charts, ablation, outcome breakdown and
drill-down, escaping whatever the model wrote."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pipeline_runs as pr
import pytest
from html_blobs import read_page
from records_factory import entry, manifest, sample

from trex_eval.errors import ConfigError
from trex_eval.records import Verdict
from trex_eval.report import (
    HtmlOptions,
    RunResults,
    arrange,
    load_published,
    render_html_report,
    shipped_published_csv,
    write_html_report,
)


class _Elements(HTMLParser):
    """Start tags with their attributes, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def having(self, tag: str, css_class: str | None = None, **attributes: str) -> list[dict[str, str]]:
        found = []
        for name, attrs in self.tags:
            classes = attrs.get("class", "").split()
            wanted = all(attrs.get(key.replace("_", "-")) == value for key, value in attributes.items())
            if name == tag and (css_class is None or css_class in classes) and wanted:
                found.append(attrs)
        return found


def _parse(html: str) -> _Elements:
    parser = _Elements()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def html(broken: RunResults, reference: RunResults) -> str:
    published = shipped_published_csv()
    assert published is not None
    return render_html_report([broken, reference], baseline=0, published=load_published(published))


SHARED = "prompt (the same for every run)"


class TestDocument:
    def test_self_contained(self, html: str) -> None:
        elements = _parse(html)
        assert not elements.having("link") and not elements.having("img") and not elements.having("iframe")
        assert all("src" not in attrs for _, attrs in elements.tags)
        assert "@import" not in html and "url(" not in html
        # the only addresses are the published sources' links, which load nothing
        assert {attrs["href"] for attrs in elements.having("a") if attrs["href"].startswith("http")} == {
            score.url for score in load_published(Path(str(shipped_published_csv())))
        }

    def test_charts(self, html: str) -> None:
        elements = _parse(html)
        bars = elements.having("svg", "chart-bars")
        assert len(bars) == len(pr.BENCHMARKS) + 1  # one per column group, one for the macro average
        assert len(elements.having("svg", "chart-delta")) == 1
        assert len(elements.having("svg", "chart-stack")) == 1
        assert len(elements.having("rect", "bar")) == 2 * (len(pr.BENCHMARKS) + 1) + len(pr.BENCHMARKS) + 1
        assert len(elements.having("g", "ci")) == len(elements.having("rect", "bar"))
        delta_bars = [attrs for attrs in elements.having("rect", "bar") if "up" in attrs["class"].split()]
        assert len(delta_bars) == len(pr.BENCHMARKS) + 1  # reference beats broken everywhere
        segments = elements.having("rect", "segment")
        assert {attrs["data-outcome"] for attrs in segments} == {
            "correct",
            "wrong",
            "infeasible",
            "syntax_error",
            "runtime_error",
            "limit",
            "no_code",
            "api_error",
            "environment",
        }

    def test_tables(self, html: str) -> None:
        assert "Leaderboard (measured)" in html and "Reported, not re-run" in html
        assert html.index("Leaderboard (measured)") < html.index("Reported, not re-run")
        assert "macro mean of per-benchmark pass@1" in html
        assert "gained (7): <code>0, 1, 2, 3, 4, 5, 6</code>" in html

    def test_drilldown_lists_every_problem_with_its_verdicts(self, html: str) -> None:
        elements = _parse(html)
        problems = elements.having("details", "problem")
        assert len(problems) == pr.LIMIT * len(pr.BENCHMARKS)
        broken_total = sum(len(ids) for ids in pr.BREAKAGES.values())
        assert len(elements.having("details", "problem", data_disagree="1")) == broken_total
        # failure reasons, as the rule wrote them, are the badges' tooltips; bodies hold them all
        assert "ValueError: deliberately broken" in html
        assert "wall-clock limit of 4 s exceeded" in html
        page = read_page(html)
        shared = [p for bench in page.values() for p in bench.problems.values() if p.texts_titled(SHARED)]
        assert len(shared) == pr.LIMIT * len(pr.BENCHMARKS)
        assert all("rule <code>" in p.body_html for bench in page.values() for p in bench.problems.values())

    def test_written_file(self, broken: RunResults, reference: RunResults, tmp_path: Path) -> None:
        path = tmp_path / "deep" / "report.html"
        write_html_report(path, [broken, reference], baseline=None)
        written = path.read_text(encoding="utf-8")
        assert written.startswith("<!DOCTYPE html>") and 'id="ablation"' not in written


class TestDrilldownLimits:
    def test_detail_goes_to_disagreements_first(self, broken: RunResults, reference: RunResults) -> None:
        page = read_page(render_html_report([broken, reference], options=HtmlOptions(detail_limit=2)))
        for bench in page.values():
            assert sum(1 for problem in bench.problems.values() if problem.texts) == 2
        nl4opt = page["nl4opt"].problems
        # problems 0 and 1 are broken (disagree) and come first in id order: they get the texts
        assert [pid for pid, problem in nl4opt.items() if problem.texts] == ["0", "1"]
        assert sum("Texts not embedded" in problem.body_html for problem in nl4opt.values()) == pr.LIMIT - 2
        # every problem keeps its verdicts and the reasons the rule gave, texts or not
        assert "ValueError: deliberately broken" in nl4opt["3"].body_html
        assert sum(problem.body_html.count("rule <code>") for problem in nl4opt.values()) == 2 * pr.LIMIT

    def test_model_output_is_escaped(self) -> None:
        hostile = '</pre><script>alert("owned")</script><img src="http://example.com/x.png">'
        run = arrange(
            manifest("hostile", [entry("toy", problems=1)], model="<b>bold</b>"),
            [sample("toy", "1", verdict=Verdict.WRONG, predicted=2.0, text=hostile)],
        )
        html = render_html_report([run])
        assert "<script>alert" not in html and "<img" not in html and "<b>bold" not in html
        assert "&lt;b&gt;bold&lt;/b&gt;" in html
        # the texts travel in the blob and are set as text, never parsed as markup
        assert read_page(html)["toy"].problems["1"].texts_titled("completion") == [hostile]

    def test_runs_that_cannot_pair_explain_why(self, reference: RunResults, sampled: RunResults) -> None:
        html = render_html_report([reference, sampled])
        assert "No paired comparison" in html and "different problem selections" in html

    def test_refusals(self, reference: RunResults) -> None:
        with pytest.raises(ConfigError):
            render_html_report([])
        with pytest.raises(ConfigError, match="out of range"):
            render_html_report([reference], baseline=3)
