"""The field's benchmarks (issue 15) on their real files in ../shared/benchmarks/<owner>+<repo>/:
row counts, pinned sha256, each kind of label, a rendered prompt, suites, and `benchmarks diff`
(the MAMO ones against SIRL's change log: tests/benchmarks/test_benchmarks_diff_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark, load_spec, shipped_spec_paths
from trex_eval.benchmarks.data import load_sources, source_dir, sources_root, verify_sources
from trex_eval.benchmarks.diff import diff
from trex_eval.benchmarks.spec import SourceSpec
from trex_eval.benchmarks.suites import expand, suites
from trex_eval.files import sha256_file
from trex_eval.prompting.render import PromptRenderer
from trex_eval.records import ObjectiveReference, Problem, SolveStatus

FIELD = sorted(name for name, path in shipped_spec_paths().items() if load_spec(path).source.root == "source")

ROWS = {
    "complexor": 18,
    "complexor@orthought": 17,
    "icml24-task3": 410,
    "industryor": 100,
    "industryor@optimind": 99,
    "industryor@orthought": 82,
    "industryor@orthought-clean": 42,
    "industryor@sirl-fixedv2": 100,
    "logior": 92,
    "mamo-complexlp": 211,
    "mamo-complexlp@optimind": 210,
    "mamo-complexlp@sirl-fixed": 203,
    "mamo-easylp": 652,
    "mamo-easylp@sirl-fixed": 642,
    "miplib-nl": 223,
    "nl4opt-245": 245,
    "nl4opt-245@optmath": 245,
    "nl4opt-e": 289,
    "nlp4lp": 242,
    "nlp4lp@orthought": 250,
    "optibench-605": 605,
    "optibench-605@sirl": 605,
    "optmath-bench": 166,
    "optmath-bench@optimind": 128,
    "optmath-bench@sirl-166": 166,
    "optmath-bench@sirl-193": 193,
}


def _objective(problem: Problem) -> ObjectiveReference:
    assert isinstance(problem.reference, ObjectiveReference)
    return problem.reference


def test_every_field_benchmark_is_listed_with_its_count() -> None:
    assert {name: load_spec(shipped_spec_paths()[name]).source.rows for name in FIELD} == ROWS


def test_the_shared_copy_is_found_beside_the_t_rex_data(data_dir: Path) -> None:
    root = sources_root(data_dir)
    assert root == data_dir.resolve().parent
    assert source_dir("Cardinal-Operations/SIRL", data_dir) == root / "Cardinal-Operations+SIRL"


def test_every_pinned_file_matches_its_sha256(data_dir: Path) -> None:
    reports = verify_sources(sources_root(data_dir))
    assert set(reports) == set(load_sources()) and len(reports) == 9
    assert {repo: (r.missing, r.corrupt) for repo, r in reports.items() if not r.ok} == {}


@pytest.mark.parametrize("name", FIELD)
def test_benchmark_rows_sha256_and_prompt(name: str, data_dir: Path) -> None:
    bench = load_benchmark(name, data_dir=data_dir)
    spec = bench.spec
    # source.rows counts the instances left out for a data file absent from the copy (MIPLIB-NL).
    assert len(bench) + sum(row.absent for row in bench.skipped) == ROWS[name] and not bench.row_errors
    # The rows read come from files pinned in the manifest, each matching its sha256 there.
    pin = load_sources()[spec.source.repository or ""]
    folder = source_dir(pin.repository, data_dir)
    source = folder / spec.source.path
    files = [source] if source.is_file() else [p for p in source.rglob("*") if p.is_file()]
    pinned = {folder / rel: sha for rel, sha in pin.files.items()}
    read = [path for path in files if path in pinned]
    assert read and all(sha256_file(path) == pinned[path] for path in read)
    # Version, family and rendered prompt of one problem.
    assert spec.family and spec.labels.version and name.startswith(spec.family)
    assert ("@" in name) == (name != spec.family)
    problem = bench.problems[0]
    assert problem.meta["label_version"] == spec.labels.version
    prompt = PromptRenderer(bench, spec.prompt.default_set).render(problem)
    assert problem.question.strip()[:200] in prompt.messages[-1].content


def test_number_and_sentinel_labels(data_dir: Path) -> None:
    nl4opt = load_benchmark("nl4opt-245", data_dir=data_dir)
    refs = [_objective(p) for p in nl4opt.problems]
    sentinels = [p for p in nl4opt.problems if _objective(p).value is None]
    assert len(sentinels) == 17
    assert all(_objective(p).status is SolveStatus.INF_OR_UNBD for p in sentinels)
    assert {_objective(p).label for p in sentinels} == {"No Best Solution"}
    assert all(p.meta["label_sentinel"] == "No Best Solution" for p in sentinels)
    first = refs[0]
    assert first.status is SolveStatus.OPTIMAL and first.value == float(first.label)

    industry = load_benchmark("industryor", data_dir=data_dir)
    model_only = {p.id: _objective(p) for p in industry.problems if _objective(p).value is None}
    assert sorted(model_only) == ["15", "49", "54"]
    assert {r.label for r in model_only.values()} == {"-99999"}
    assert all(r.status is SolveStatus.INF_OR_UNBD for r in model_only.values())
    assert industry.problems[0].meta["label_decimals"] == "2"


def test_multi_value_answers_are_graded_on_the_last_entry(data_dir: Path) -> None:
    bench = load_benchmark("optibench-605", data_dir=data_dir)
    problem = bench.get("1")
    values = json.loads(problem.meta["answer_values"])
    assert len(values) == 10 and values["Total Profit"] == "395000.0"
    assert _objective(problem).value == 395000.0
    # The objective entry agrees with SIRL's objective-only copy of the same rows (rounded to 2
    # decimals there): by question text, every row matches within that rounding.
    sirl = {
        " ".join(p.question.split()): _objective(p).value
        for p in load_benchmark("optibench-605@sirl", data_dir=data_dir).problems
    }
    ours = {" ".join(p.question.split()): _objective(p).value for p in bench.problems}
    common = sorted(set(sirl) & set(ours))
    assert len(common) == 605
    assert all(abs((ours[q] or 0) - (sirl[q] or 0)) <= 0.005 + 1e-9 for q in common)


def test_status_list_and_unlabelled_rows(data_dir: Path) -> None:
    nlp = load_benchmark("nlp4lp@orthought", data_dir=data_dir)
    statuses = [_objective(p).status for p in nlp.problems]
    assert statuses.count(SolveStatus.INF_OR_UNBD) == 8
    assert len(nlp.skipped) == 14 and all(p.reference_code for p in nlp.problems)
    optimind = load_benchmark("mamo-complexlp@optimind", data_dir=data_dir)
    assert _objective(optimind.problems[0]).label == "18.0" and _objective(optimind.problems[0]).value == 18.0
    assert len(load_benchmark("optmath-bench@optimind", data_dir=data_dir).skipped) == 2


def test_a_source_root_needs_a_repository() -> None:
    with pytest.raises(ValueError, match="repository"):
        SourceSpec(path="x.jsonl", root="source")


def test_suites() -> None:
    found = suites()
    assert found["t-rex"] == ("b4o-feasible", "b4o-orgeval", "nl4opt", "optibench")
    assert set(found["sirl"]) == {
        "nl4opt-245",
        "mamo-easylp@sirl-fixed",
        "mamo-complexlp@sirl-fixed",
        "industryor@sirl-fixedv2",
        "optmath-bench@sirl-166",
        "optibench-605@sirl",
    }
    assert set(found["orlm"]) == {"nl4opt-245", "mamo-easylp", "mamo-complexlp", "industryor"}
    assert found["all"] == tuple(sorted(shipped_spec_paths()))
    assert expand(("nl4opt", "sirl", "nl4opt-245")) == ("nl4opt", *found["sirl"])


# The MAMO diffs against SIRL's change log: tests/benchmarks/test_benchmarks_diff_cli.py.


def test_diff_matches_by_text_when_ids_name_other_problems(data_dir: Path) -> None:
    computed: list[int] = []
    result = diff(
        load_benchmark("industryor", data_dir=data_dir),
        load_benchmark("industryor@sirl-fixedv2", data_dir=data_dir),
        progress=lambda done, planned: computed.append(done),
    )
    assert result.matched_by == "question text"
    counts = result.counts()
    # As benchmarks/notes/field-benchmarks.md says: every question differs between the two files.
    assert (counts["matched"], counts["reworded"], counts["relabelled"]) == (74, 74, 44)
    assert (counts["removed"], counts["added"]) == (26, 26)
    # Bounded: a few exact (quadratic) ratios per problem, not one per pair of the 100 x 100.
    assert computed == list(range(1, len(computed) + 1)) and 74 <= len(computed) <= 3 * (100 + 100)
