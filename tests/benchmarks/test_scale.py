"""Instance scale (issue 49): MIPLIB-NL's rows name their reference model's size, size bucket and
memory, read from the committed sizes file; a sizes file or bucket list that is wrong is refused
where it is wrong; and each job's limits follow the rule's program budget and the row's bucket."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from pydantic import ValidationError

from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.loading import Benchmark
from trex_eval.benchmarks.scale import SIZE_FIELDS, ModelSize, bucket_of, read_sizes, scale_meta
from trex_eval.benchmarks.spec import ScaleSpec, SizeBucket
from trex_eval.errors import BenchmarkError, ConfigError
from trex_eval.linear_model import MAX_COLUMNS, MAX_ROWS
from trex_eval.protocols.plan import BUDGET_WALL_FACTOR, BUDGET_WALL_MARGIN_S, plan_for
from trex_eval.sandbox import SandboxLimits

SIZES = Path(__file__).resolve().parents[2] / "benchmarks" / "notes" / "miplib-nl-sizes.csv"
BUCKETS = (
    SizeBucket(name="small", below=2000, memory_mib=2048),
    SizeBucket(name="big", below=100_000, memory_mib=8192),
    SizeBucket(name="rest", memory_mib=12288),
)


@pytest.fixture(scope="module")
def bench(data_dir: Path) -> Benchmark:
    return load_benchmark("miplib-nl", data_dir=data_dir)


def test_rows_name_their_size_bucket_and_memory(bench: Benchmark) -> None:
    flugpl, air03 = bench.get("flugpl").meta, bench.get("air03").meta
    assert (flugpl["variables"], flugpl["constraints"], flugpl["nonzeros"]) == ("18", "18", "46")
    assert (flugpl["size_bucket"], flugpl["memory_mib"], flugpl["record_mib"]) == ("small", "2048", "16")
    # air03: 10,757 columns over 124 rows: past the pip licence's 2,000, under the verify caps.
    assert (air03["variables"], air03["size_bucket"], air03["memory_mib"]) == ("10757", "medium", "4096")
    assert all("size_bucket" in p.meta and p.meta["memory_mib"].isdigit() for p in bench.problems)


def test_the_sizes_file_covers_every_instance_measured_or_says_why(bench: Benchmark) -> None:
    with SIZES.open(encoding="utf-8", newline="") as handle:
        rows = {row["instance"]: row for row in csv.DictReader(handle)}
    assert tuple(rows[next(iter(rows))]) == SIZE_FIELDS
    names = {p.id for p in bench.problems} | {Path(s.where).name for s in bench.skipped}
    assert set(rows) == names and len(rows) == 223
    for name, row in rows.items():
        assert bool(row["variables"]) != bool(row["note"]), (name, row)
    # Every complete instance's model was built here or its row says why not.
    built = [p for p in bench.problems if "variables" in p.meta]
    assert len(built) + sum(1 for p in bench.problems if p.meta.get("size_note")) == len(bench)


def test_the_verification_caps_split_the_huge_bucket_off(bench: Benchmark) -> None:
    """The last bucket starts where the harness's re-solve stops: MAX_COLUMNS and MAX_ROWS."""
    assert MAX_COLUMNS == MAX_ROWS == bench.spec.scale.buckets[-2].below  # type: ignore[union-attr]


def test_buckets_cut_by_the_larger_of_variables_and_constraints() -> None:
    assert bucket_of(ModelSize(1999, 10, 30), BUCKETS).name == "small"
    assert bucket_of(ModelSize(10, 2000, 30), BUCKETS).name == "big"
    assert bucket_of(ModelSize(100_000, 1, 1), BUCKETS).name == "rest"
    unknown = ModelSize(None, None, None, "model build over 300 CPU s")
    assert bucket_of(unknown, BUCKETS).name == "rest"
    spec = ScaleSpec(sizes="x.csv", buckets=BUCKETS)
    assert scale_meta(unknown, spec) == {
        "size_bucket": "rest",
        "memory_mib": "12288",
        "record_mib": "16",
        "size_note": "model build over 300 CPU s",
    }


@pytest.mark.parametrize(
    ("buckets", "words"),
    [
        ((SizeBucket(name="a", below=10),), "without 'below'"),
        ((SizeBucket(name="a"), SizeBucket(name="b")), "without 'below'"),
        ((SizeBucket(name="a", below=10), SizeBucket(name="b", below=5), SizeBucket(name="c")), "increase"),
        ((SizeBucket(name="a", below=10), SizeBucket(name="a")), "names must differ"),
        ((), "without 'below'"),
    ],
)
def test_bad_bucket_lists_are_refused(buckets: tuple[SizeBucket, ...], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        ScaleSpec(sizes="x.csv", buckets=buckets)


def test_a_bad_sizes_file_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "sizes.csv"
    path.write_text("instance,variables,constraints,nonzeros\na,1,2,3\nb,12x,2,3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="variables '12x' is not a non-negative integer") as caught:
        read_sizes(path)
    assert caught.value.where == f"{path}:3"
    path.write_text("instance,variables\na,1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="lacks the column"):
        read_sizes(path)
    with pytest.raises(ConfigError, match="cannot read"):
        read_sizes(tmp_path / "absent.csv")


def test_a_benchmark_naming_a_bad_sizes_file_says_where(
    bench: Benchmark, tmp_path: Path, data_dir: Path
) -> None:
    spec = bench.spec_path.read_text(encoding="utf-8").replace(
        "sizes: notes/miplib-nl-sizes.csv", f"sizes: {tmp_path / 'none.csv'}"
    )
    copy = tmp_path / "miplib-nl.yaml"
    copy.write_text(spec, encoding="utf-8")
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(str(copy), data_dir=data_dir)
    assert "cannot read the sizes file" in caught.value.message
    assert caught.value.hint is not None and "scale.sizes" in caught.value.hint


def test_job_limits_follow_the_rules_budget_and_the_rows_bucket(bench: Benchmark) -> None:
    plan = plan_for(bench, rule="budgeted:45,verify=30")
    small, medium = plan.limits_for(bench.get("flugpl")), plan.limits_for(bench.get("air03"))
    assert (small.cpu_s, small.memory_mib) == (45.0, 2048)
    assert small.wall_s == BUDGET_WALL_FACTOR * 45.0 + BUDGET_WALL_MARGIN_S
    assert (medium.cpu_s, medium.memory_mib, medium.record_mib) == (45.0, 4096, 48)
    # The benchmark's own rule: ten minutes of CPU.
    assert plan_for(bench).limits_for(bench.get("flugpl")).cpu_s == 600.0
    # A rule without a program budget keeps the protocol's CPU limit; the bucket's memory holds.
    strict = plan_for(bench, rule="strict").limits_for(bench.get("air03"))
    assert (strict.cpu_s, strict.memory_mib) == (SandboxLimits().cpu_s, 4096)
    # Limits the user chose hold for every job.
    chosen = SandboxLimits(wall_s=20, cpu_s=20, memory_mib=3000)
    assert plan_for(bench, rule="budgeted:45", limits=chosen).limits_for(bench.get("air03")) == chosen


def test_an_unknown_bucket_key_names_the_keys_a_bucket_takes(
    bench: Benchmark, tmp_path: Path, data_dir: Path
) -> None:
    spec = bench.spec_path.read_text(encoding="utf-8").replace(
        "{name: small, below: 2000, memory_mib: 2048", "{name: small, below: 2000, memory: 2048"
    )
    copy = tmp_path / "miplib-nl.yaml"
    copy.write_text(spec.replace("sizes: notes/", f"sizes: {SIZES.parent}/"), encoding="utf-8")
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(str(copy), data_dir=data_dir)
    assert "unknown key 'scale.buckets.0.memory' (did you mean 'memory_mib'?)" in str(caught.value)
