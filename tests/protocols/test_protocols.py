"""The protocol seam: the registry, the two shipped protocols' choices, a third protocol added as
one folder and a registry line, and no protocol test outside ``trex_eval/protocols``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import trex_eval
from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.protocols import PROTOCOLS, get_protocol, protocol_names, register_protocol
from trex_eval.protocols.plan import plan_for, rules_by_protocol
from trex_eval.records import GraderKind, Verdict
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

PACKAGE = Path(trex_eval.__file__).resolve().parent


@pytest.fixture
def answer_only() -> Iterator[str]:
    register_protocol("answer-only", "answer_only_protocol:PROTOCOL")
    yield "answer-only"
    PROTOCOLS.unregister("answer-only")


def test_the_registry_holds_the_shipped_protocols() -> None:
    assert protocol_names()[:2] == ("default", "trex-compat")
    for name in protocol_names():
        assert get_protocol(name).name == name
    with pytest.raises(ConfigError, match="unknown protocol 'nope'"):
        get_protocol("nope")


def test_each_protocol_decides_extractor_rule_and_limits(data_dir: Path) -> None:
    nl4opt, orgeval = (
        load_benchmark("nl4opt", data_dir=data_dir),
        load_benchmark("b4o-orgeval", data_dir=data_dir),
    )
    default = {b.name: plan_for(b) for b in (nl4opt, orgeval)}
    compat = {b.name: plan_for(b, protocol="trex-compat") for b in (nl4opt, orgeval)}
    assert {n: (p.extractor, p.rule.spec, p.limits.wall_s) for n, p in default.items()} == {
        "nl4opt": ("default", "strict@3", 60.0),
        "b4o-orgeval": ("default", "orgeval-exact@2", 60.0),
    }
    assert {n: (p.extractor, p.rule.spec, p.limits.wall_s) for n, p in compat.items()} == {
        "nl4opt": ("trex-compat-solver", "trex-compat@1", 360.0),
        "b4o-orgeval": ("trex-compat-orgeval", "orgeval-trex-compat@1", 180.0),
    }
    assert rules_by_protocol(orgeval.spec.grader) == {
        "default": "orgeval-exact@2",
        "trex-compat": "orgeval-trex-compat@1",
        "orlm": "orgeval-exact@2",  # ORLM grades no structure benchmark: the default's reading
    }
    assert rules_by_protocol(nl4opt.spec.grader)["orlm"] == "orlm-compat@2"


def test_a_rule_override_of_the_other_kind_is_refused(data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="objective rule, a structure rule is needed"):
        plan_for(load_benchmark("b4o-orgeval", data_dir=data_dir), rule="strict")


def test_a_third_protocol_is_one_folder_and_a_registry_line(
    answer_only: str, tmp_path: Path, data_dir: Path
) -> None:
    bench = load_benchmark("b4o-feasible", data_dir=data_dir)
    plan = plan_for(bench, protocol=answer_only)
    assert (plan.extractor, plan.rule.spec, plan.limits.wall_s) == ("raw", "orlm@3", 30.0)
    assert plan_for(load_benchmark("b4o-orgeval", data_dir=data_dir), protocol=answer_only).rule.kind is (
        GraderKind.STRUCTURE
    )
    # A whole run under it: reference programs, read straight from the recorded answers.
    problems = bench.problems[:3]
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text(
        "".join(
            json.dumps(
                {
                    "problem_id": p.id,
                    "completion": (p.reference_code or "").replace("data.json", "instance.json")
                    + "\nmodel.optimize()\n",
                }
            )
            + "\n"
            for p in problems
        )
    )
    model = BackendSpec(name="recorded", backend="replay", options={"path": str(recorded)})
    spec = RunSpec(model=model, benchmarks=("b4o-feasible",), limit=3, protocol=answer_only)
    result = pipeline.run(spec, RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False))
    manifest = RunStore(result.run_dir).read_manifest()
    assert manifest.settings.protocol == answer_only
    (entry,) = manifest.settings.benchmarks
    assert (entry.rule, entry.extractor, entry.limits.wall_s if entry.limits else None) == (
        "orlm@3",
        "raw",
        30.0,
    )
    records = list(RunStore(result.run_dir).iter_samples())
    assert [r.grade.verdict for r in records] == [Verdict.CORRECT] * 3
    assert {r.grade.rule for r in records} == {"orlm@3"}
    (bench_summary,) = result.summary.benchmarks
    assert bench_summary.compat.dataset == "B4O-FEASIBLE" and bench_summary.compat.score_count == 3


def test_failed_samples_record_the_versioned_rule(tmp_path: Path, data_dir: Path) -> None:
    """A sample with no recorded completion (missing) records ``name@version`` like a graded one."""
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text(json.dumps({"problem_id": "BENCH4OPT_1", "completion": "no code here"}) + "\n")
    model = BackendSpec(name="recorded", backend="replay", options={"path": str(recorded)})
    spec = RunSpec(model=model, benchmarks=("b4o-orgeval",), limit=2)
    result = pipeline.run(spec, RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False))
    records = list(RunStore(result.run_dir).iter_samples())
    assert {r.grade.verdict for r in records} == {Verdict.NO_CODE, Verdict.MISSING}
    assert {r.grade.rule for r in records} == {"orgeval-exact@2"}
    assert [b.rule for b in RunStore(result.run_dir).read_manifest().settings.benchmarks] == [
        "orgeval-exact@2"
    ]


def test_no_protocol_is_tested_by_name_outside_the_protocols_package() -> None:
    pattern = re.compile(r"""protocol\s*[!=]=\s*["']|["']trex-compat["']\s*(?:==|!=|in\b)""")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if "protocols" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert offenders == []
