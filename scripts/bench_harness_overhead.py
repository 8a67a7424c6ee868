"""Harness overhead per sample outside the sandbox, with the replay backend (no model time).

Replays a finished run (default: a fresh ``--model reference`` run over all four benchmarks) and
times, per sample, everything the harness does around the sandbox: render the prompt, get the
completion from the replay backend, append it to completions.jsonl, extract the program, build the
sandbox job, grade the recorded execution, and append the SampleRecord to samples.jsonl. The
sandbox execution itself is not re-run (its records come from the replayed run); grading is
reported separately because the ORGEval structure check is real work, not overhead.

    python scripts/bench_harness_overhead.py [--run RUN_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from trex_eval.backends.base import BackendSpec, GenerationRequest, create_backend
from trex_eval.backends.presets import load_presets, resolve_preset
from trex_eval.benchmarks import data, load_benchmark
from trex_eval.prompting.render import PromptRenderer
from trex_eval.protocols.judge import ReferenceModels
from trex_eval.protocols.plan import plan_for
from trex_eval.records import SampleRecord, SamplingParams
from trex_eval.run import pipeline as runner
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import CompletionLine, RunStore


def _reference_run(data_dir: Path, out: Path) -> Path:
    spec = resolve_preset("reference", presets=load_presets())
    options = RunOptions(data_dir=data_dir, out=out / "reference", show_progress=False)
    return runner.run(RunSpec(model=spec), options).run_dir


async def _measure(run_dir: Path, data_dir: Path, scratch: Path) -> dict[str, dict[str, list[float]]]:
    store = RunStore(run_dir)
    records = list(store.iter_samples())
    spec = BackendSpec(
        name="replay",
        backend="replay",
        model="bench",
        options={"path": str(run_dir / "samples.jsonl")},
        sampling=SamplingParams(),
    )
    backend = create_backend(spec)
    await backend.start()
    out = RunStore.create(scratch / "replayed", store.read_manifest())
    references = ReferenceModels()
    timings: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    benches = {name: load_benchmark(name, data_dir=data_dir) for name in {r.benchmark for r in records}}
    plans = {name: plan_for(bench) for name, bench in benches.items()}
    renderers = {name: PromptRenderer(bench, "t-rex") for name, bench in benches.items()}
    gc.collect()
    gc.freeze()  # as the runner does once its long-lived data are loaded
    for record in records:
        name = record.benchmark
        problem = benches[name].get(record.problem_id)
        plan = plans[name]
        t0 = time.perf_counter()
        prompt = renderers[name].render(problem)
        completion = await backend.generate(
            GenerationRequest(problem=problem, prompt=prompt, params=spec.sampling, sample_index=0, seed=42)
        )
        out.append_completion(CompletionLine(benchmark=name, prompt=prompt, completion=completion))
        program = plan.extract(completion)
        plan.job(problem, program)
        t1 = time.perf_counter()
        grade = plan.grade(problem, record.execution, reference_model=references)
        t2 = time.perf_counter()
        out.append_sample(
            SampleRecord(
                benchmark=name,
                problem_id=problem.id,
                sample_index=0,
                prompt=prompt,
                completion=completion,
                program=program,
                execution=record.execution,
                grade=grade,
            )
        )
        t3 = time.perf_counter()
        timings[name]["harness"].append((t1 - t0) + (t3 - t2))
        timings[name]["grade"].append(t2 - t1)
    await backend.close()
    out.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", type=Path, help="a finished run directory to replay (default: make one)")
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    data_dir = data.resolve_data_dir(args.data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        run_dir = args.run or _reference_run(data_dir, scratch)
        timings = asyncio.run(_measure(run_dir, data_dir, scratch))
    print(
        f"{'benchmark':<14} {'samples':>7} {'harness median ms':>18} {'harness p95 ms':>15} "
        f"{'grade median ms':>16}"
    )
    everything: list[float] = []
    for name, parts in sorted(timings.items()):
        harness = sorted(parts["harness"])
        everything += harness
        p95 = harness[int(0.95 * (len(harness) - 1))]
        print(
            f"{name:<14} {len(harness):>7} {1000 * statistics.median(harness):>18.3f} {1000 * p95:>15.3f} "
            f"{1000 * statistics.median(parts['grade']):>16.3f}"
        )
    print(
        f"{'all':<14} {len(everything):>7} {1000 * statistics.median(everything):>18.3f} "
        f"{1000 * sorted(everything)[int(0.95 * (len(everything) - 1))]:>15.3f}   mean "
        f"{1000 * statistics.fmean(everything):.3f} ms"
    )


if __name__ == "__main__":
    main()
