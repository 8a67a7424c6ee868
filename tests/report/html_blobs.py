"""Read the HTML report's lazily loaded drill-down the way its inline script does, in Python.

Each benchmark section (``section.bench-problems``) names its blob in ``data-texts``; the blob is
the text of ``<script type="application/octet-stream" id=...>``: base64 of gzip of the JSON object
``{"bodies": [...], "texts": [...]}``. Problem ``details.problem[data-body=i]`` gets
``bodies[i]`` as its inner HTML, and every element of that body with ``data-t="T0 S0 T1 S1 ..."``
gets one collapsible text per pair: title ``texts[Tk]``, text ``texts[Sk]``.

    page = read_page(html)
    problem = page["nl4opt"].problems["3"]
    problem.summary_html, problem.body_html, problem.texts  # [(title, text), ...] in page order
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any


@dataclass
class LazyProblem:
    problem_id: str
    attrs: dict[str, str]
    summary_html: str
    body_html: str = ""
    texts: list[tuple[str, str]] = field(default_factory=list)
    """Every (title, text) the page shows once the problem is opened, in document order."""
    holders: list[dict[str, str]] = field(default_factory=list)
    """The attributes of each body element that holds texts (its ``data-t`` resolved above)."""

    def texts_titled(self, title: str) -> list[str]:
        return [text for shown, text in self.texts if shown == title]


@dataclass
class LazyBenchmark:
    name: str
    blob_id: str
    blob: dict[str, Any]
    problems: dict[str, LazyProblem]


def decode_blob(encoded: str) -> dict[str, Any]:
    """base64 -> gzip -> JSON, as ``atob`` + ``DecompressionStream('gzip')`` + ``JSON.parse``."""
    value = json.loads(gzip.decompress(base64.b64decode(encoded, validate=True)).decode("utf-8"))
    assert isinstance(value, dict)
    return value


class _Page(HTMLParser):
    """Benchmark sections, their problems (summary markup kept) and every blob script's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[str, str]] = []  # (benchmark, blob id)
        self.problems: list[tuple[int, dict[str, str], list[str]]] = []  # (section, attrs, summary parts)
        self.scripts: dict[str, str] = {}
        self._script: str | None = None
        self._summary: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "section" and "bench-problems" in found.get("class", "").split():
            self.sections.append((found["data-benchmark"], found["data-texts"]))
        elif tag == "details" and "problem" in found.get("class", "").split():
            self.problems.append((len(self.sections) - 1, found, []))
        elif tag == "summary" and self.problems and not self.problems[-1][2]:
            self._summary = self.problems[-1][2]
        elif tag == "script" and found.get("type") == "application/octet-stream":
            self._script = found["id"]
            self.scripts[self._script] = ""
        if self._summary is not None:
            self._summary.append(self.get_starttag_text() or "")

    def handle_endtag(self, tag: str) -> None:
        if self._summary is not None:
            self._summary.append(f"</{tag}>")
            if tag == "summary":
                self._summary = None
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts[self._script] += data
        if self._summary is not None:
            self._summary.append(data)


class _Holders(HTMLParser):
    """The attributes of every element with ``data-t``, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.holders: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if "data-t" in found:
            self.holders.append(found)


def read_page(html: str) -> dict[str, LazyBenchmark]:
    """Every benchmark's drill-down, with each problem's body and texts resolved as the page does."""
    page = _Page()
    page.feed(html)
    page.close()
    benchmarks: dict[str, LazyBenchmark] = {}
    for name, blob_id in page.sections:
        benchmarks[name] = LazyBenchmark(name, blob_id, decode_blob(page.scripts[blob_id]), {})
    for section, attrs, summary in page.problems:
        bench = benchmarks[page.sections[section][0]]
        texts: list[str] = bench.blob["texts"]
        body = bench.blob["bodies"][int(attrs["data-body"])]
        holders = _Holders()
        holders.feed(body)
        pairs: list[tuple[str, str]] = []
        for holder in holders.holders:
            ids = [int(part) for part in holder["data-t"].split(" ")]
            assert len(ids) % 2 == 0, holder
            pairs += [(texts[ids[i]], texts[ids[i + 1]]) for i in range(0, len(ids), 2)]
        summary_html = "".join(summary)
        problem_id = summary_html.split('<span class="pid">', 1)[1].split("<", 1)[0]
        bench.problems[problem_id] = LazyProblem(
            problem_id, attrs, summary_html, body, pairs, holders.holders
        )
    return benchmarks
