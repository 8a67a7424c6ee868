"""A run asked to keep its records returns exactly what its run directory holds."""

from __future__ import annotations

from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.records import SamplingParams
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import SAMPLES, RunStore

REFERENCE = BackendSpec(name="reference", backend="reference", model="reference", sampling=SamplingParams())


def test_kept_records_equal_the_stored_ones_across_a_resume(tmp_path: Path, data_dir: Path) -> None:
    spec = RunSpec(model=REFERENCE, benchmarks=("b4o-feasible",), limit=4)
    out = tmp_path / "run"
    first = pipeline.run(spec, RunOptions(data_dir=data_dir, out=out, show_progress=False))
    assert first.records == ()  # not asked for
    # Lose the last stored sample: the resumed session grades it again and keeps the others
    # from the file.
    lines = (out / SAMPLES).read_bytes().splitlines(keepends=True)
    (out / SAMPLES).write_bytes(b"".join(lines[:-1]))
    resumed = pipeline.run(
        pipeline.resume_spec(out),
        RunOptions(data_dir=data_dir, out=out, show_progress=False, keep_records=True),
    )
    assert resumed.graded_now == 1
    stored = list(RunStore(out).iter_samples())
    assert len(stored) == 4
    assert list(resumed.records) == stored
    assert resumed.summary.benchmarks == first.summary.benchmarks
