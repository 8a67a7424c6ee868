"""The drill-down's lazily loaded blob: its format, that it decodes (base64 -> gzip -> JSON, as the
browser does) to exactly the texts the runs stored, that shared texts are stored once, and that a
run adds little to the page."""

from __future__ import annotations

from pathlib import Path

import pipeline_runs as pr
from html_blobs import decode_blob, read_page
from markupsafe import escape
from records_factory import entry, manifest, sample

from trex_eval.records import SampleRecord, Verdict
from trex_eval.report import HtmlOptions, RunResults, arrange, load_run, render_html_report
from trex_eval.report.drilldown import encode_blob

UNCLIPPED = HtmlOptions(text_limit=10**9)

FULL_RUN_PROBLEMS = 1627
"""Problems in a run over all four full benchmarks."""
PER_PROBLEM_BYTES = 400
"""Budget of drill-down bytes one more run may add per problem: 1627 x 400 B = 0.65 MB."""
PER_RUN_FIXED_BYTES = 60_000
"""Budget of everything else one more run adds (leaderboard row, chart bars, ablation table)."""


def _prompt(record: SampleRecord) -> str:
    return "\n\n".join(f"[{message.role}]\n{message.content}" for message in record.prompt.messages)


def _completion(record: SampleRecord) -> str:
    completion = record.completion
    return completion.text if completion.error is None else f"[request failed] {completion.error}"


def _drill_bytes(html: str) -> int:
    return len(html[html.index('<section id="drilldown">') : html.index('<section id="runs">')].encode())


class TestBlobFormat:
    def test_encoding_is_gzip_json_in_base64_and_deterministic(self) -> None:
        texts = ["prompt", "ünïcode ✓ </script>", ""]
        encoded = encode_blob(["<p>body</p>"], texts)
        assert set(encoded) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
        assert decode_blob(encoded) == {"bodies": ["<p>body</p>"], "texts": texts}
        assert encode_blob(["<p>body</p>"], texts) == encoded  # no timestamp in the gzip header

    def test_every_problem_has_a_body_and_every_index_resolves(
        self, broken: RunResults, reference: RunResults
    ) -> None:
        page = read_page(render_html_report([broken, reference]))
        assert list(page) == list(pr.BENCHMARKS)
        for bench in page.values():
            assert len(bench.problems) == pr.LIMIT
            assert len(bench.blob["bodies"]) == pr.LIMIT
            assert sorted(int(p.attrs["data-body"]) for p in bench.problems.values()) == list(range(pr.LIMIT))
            assert len(set(bench.blob["texts"])) == len(bench.blob["texts"])  # each text once
            for problem in bench.problems.values():
                # the page inserts bodies as HTML: they hold no script and no unescaped model text
                assert "<script" not in problem.body_html.lower()


class TestTextsRoundTrip:
    def test_lazy_texts_are_the_stored_texts(self, broken: RunResults, reference: RunResults) -> None:
        page = read_page(render_html_report([broken, reference], options=UNCLIPPED))
        checked = 0
        for run in (broken, reference):
            for bench in run.benchmarks:
                for problem in bench.problems:
                    shown = page[bench.name].problems[problem.problem_id]
                    for record in problem.samples:
                        assert record is not None
                        assert _prompt(record) in shown.texts_titled("prompt (the same for every run)")
                        assert _completion(record) in shown.texts_titled("completion")
                        program = f"extracted program ({record.program.extractor}: {record.program.reason})"
                        assert (record.program.code or "(no code)") in shown.texts_titled(program)
                        assert (record.execution.stdout_tail or "(empty)") in shown.texts_titled(
                            "stdout (tail)"
                        )
                        assert (record.execution.stderr_tail or "(empty)") in shown.texts_titled(
                            "stderr (tail)"
                        )
                        assert str(escape(record.grade.reason)) in shown.body_html
                        checked += 1
        assert checked == 2 * pr.LIMIT * len(pr.BENCHMARKS)

    def test_every_run_and_sample_gets_its_own_texts(self, broken: RunResults, reference: RunResults) -> None:
        page = read_page(render_html_report([broken, reference], options=UNCLIPPED))
        broken_id = next(iter(pr.BREAKAGES["nl4opt"]))
        shown = page["nl4opt"].problems[broken_id]
        # one shared prompt, then completion, program, stdout, stderr for each run's sample
        titles = [title for title, _ in shown.texts]
        assert titles.count("prompt (the same for every run)") == 1
        assert titles.count("completion") == 2 and titles.count("stdout (tail)") == 2
        completions = shown.texts_titled("completion")
        assert completions[0] != completions[1]  # broken's answer first, then the reference's
        assert "2 *" not in completions[1]

    def test_different_prompts_are_shown_per_run(self, reference: RunResults, compat_dir: Path) -> None:
        compat = load_run(compat_dir)
        page = read_page(render_html_report([reference, compat], options=UNCLIPPED))
        for bench in page.values():
            for problem in bench.problems.values():
                shared = problem.texts_titled("prompt (the same for every run)")
                own = problem.texts_titled("prompt")
                assert (len(shared), len(own)) in ((1, 0), (0, 2))

    def test_clipped_texts_keep_head_and_tail(self) -> None:
        text = "HEAD" + "x" * 10_000 + "TAIL"
        run = arrange(manifest("long", [entry("toy", problems=1)]), [sample("toy", "1", text=text)])
        page = read_page(render_html_report([run], options=HtmlOptions(text_limit=1000)))
        (completion,) = page["toy"].problems["1"].texts_titled("completion")
        assert completion.startswith("HEAD") and completion.rstrip().endswith("TAIL")
        assert "[… 9008 characters omitted …]" in completion and len(completion) < 1100

    def test_hostile_output_stays_text(self) -> None:
        hostile = '</pre><script>alert("owned")</script><img src="http://example.com/x.png">'
        run = arrange(
            manifest("hostile", [entry("toy", problems=1)], model="<b>bold</b>"),
            [sample("toy", "1", verdict=Verdict.WRONG, predicted=2.0, text=hostile)],
        )
        html = render_html_report([run])
        assert "<script>alert" not in html and "<b>bold" not in html
        problem = read_page(html)["toy"].problems["1"]
        assert problem.texts_titled("completion") == [hostile]  # the page sets it as textContent
        assert "<b>bold" not in problem.body_html and "&lt;b&gt;bold&lt;/b&gt;" in problem.body_html
        assert "<script" not in problem.body_html


class TestSize:
    """Size growth per run, measured on real runs of 10 problems per benchmark (40 in all)."""

    def test_a_further_run_adds_little(self, reference: RunResults, compat_dir: Path) -> None:
        compat = load_run(compat_dir)
        one = render_html_report([reference])
        two = render_html_report([reference, compat])
        problems = pr.LIMIT * len(pr.BENCHMARKS)
        drill_growth = _drill_bytes(two) - _drill_bytes(one)
        assert drill_growth < problems * PER_PROBLEM_BYTES
        assert len(two.encode()) - len(one.encode()) < PER_RUN_FIXED_BYTES + problems * PER_PROBLEM_BYTES
        assert PER_RUN_FIXED_BYTES + FULL_RUN_PROBLEMS * PER_PROBLEM_BYTES < 1_000_000

    def test_the_first_run_is_small_too(self, reference: RunResults) -> None:
        # the first run also brings the prompts (about 1.2 kB a problem here, 0.7 kB on full runs)
        problems = pr.LIMIT * len(pr.BENCHMARKS)
        assert _drill_bytes(render_html_report([reference])) < problems * 1_500

    def test_a_shared_prompt_is_stored_once(self, reference: RunResults, broken: RunResults) -> None:
        page = read_page(render_html_report([broken, reference], options=UNCLIPPED))
        record = reference.benchmarks[0].problems[0].samples[0]
        assert record is not None
        assert page[reference.benchmarks[0].name].blob["texts"].count(_prompt(record)) == 1
