"""The ``trex-eval run`` pipeline: generate -> store -> extract -> execute -> grade -> store.

Entry point::

    result = run(RunSpec(model=spec, benchmarks=("nl4opt",)), RunOptions(data_dir=path))
    result.run_dir, result.summary

What the run is (:class:`~trex_eval.run.spec.RunSpec`) and how this process runs it
(:class:`~trex_eval.run.spec.RunOptions`) are separate: only the first is recorded as the run's
settings and must match on resume.

Benchmarks are prepared by :mod:`trex_eval.run.prepare`; a session (:mod:`trex_eval.run.session`)
runs every (benchmark, problem, sample) pair as an independent asyncio task, so generation never
waits for grading (the backend bounds its own concurrency, the sandbox pool bounds executions)
and grading starts with the first completion. This module opens the run directory, runs the
session and finishes the run (``finished_at``, the summary, whether it is a measurement).

Resuming (:func:`resume_spec`) re-reads the run directory: graded pairs are skipped, pairs with
a stored completion are graded without calling the model again, the rest are generated. The
settings must be identical (same model spec, sampling, benchmarks with the same data sha256,
rules, prompt set, samples, limit, protocol), so a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trex_eval.backends.endpoints import endpoint_summary
from trex_eval.benchmarks.loading import source_root
from trex_eval.errors import ConfigError, StoreError, TrexError
from trex_eval.grading import get_rule
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.records import SampleRecord, Verdict
from trex_eval.report.summary import RunSummary, render_summary_markdown, summarize, summary_json
from trex_eval.run.prepare import prepare_benchmarks, run_settings
from trex_eval.run.session import REPLAY_MISSING, EarlyPool, Session, hidden_folders
from trex_eval.run.sigterm import run_main
from trex_eval.run.spec import RunOptions, RunSpec, settings_diff, superseded_rule
from trex_eval.store import (
    COMPLETIONS,
    LOCK,
    MANIFEST,
    SAMPLES,
    RunManifest,
    RunSettings,
    RunStore,
    SampleKey,
)

__all__ = [
    "MAX_API_ERROR_RATE",
    "REPLAY_MISSING",
    "RunResult",
    "default_run_id",
    "prepare_benchmarks",
    "resume_spec",
    "run",
    "run_async",
]

MAX_API_ERROR_RATE = 0.10
"""A run with more than this fraction of its expected samples lost to failed model requests (or
with every request failed) is not a measurement: :attr:`RunResult.failure` says so and the CLI
exits with code 3."""


@dataclass(frozen=True)
class RunResult:
    """A finished session: where the run lives, its summary, what this session did (samples
    graded, completions generated, programs executed and stored executions reused), and
    ``failure``: ``None``, or why the numbers are not a measurement (see :data:`MAX_API_ERROR_RATE`)."""

    run_dir: Path
    summary: RunSummary
    graded_now: int
    generated_now: int
    executed_now: int = 0
    reused_now: int = 0
    failure: str | None = None
    notes: tuple[str, ...] = ()
    replayed: bool = False
    """The completions were read from a file (the ``replay`` backend), not asked of a model:
    ``generated_now`` counts completions read."""
    # Out of the repr: on Python 3.11 asyncio.run formats its task, result included, when it
    # restores the SIGINT handler (0.17 s for 342 audit records).
    records: tuple[SampleRecord, ...] = field(default=(), repr=False)
    """Every sample of the run (the last record of each), where ``RunOptions.keep_records`` asked."""


def run(spec: RunSpec, options: RunOptions | None = None) -> RunResult:
    """Run (or resume) an evaluation. Blocking; see :func:`run_async`. A SIGTERM cancels the run
    and reaches the process's handler once the loop is closed (:mod:`trex_eval.run.sigterm`)."""
    return run_main(run_async(spec, options))


def resume_spec(run_dir: Path) -> RunSpec:
    """The spec that continues the run in ``run_dir`` (settings come from its manifest).

    Raises:
        StoreError: a benchmark of the run was graded under a version of its rule that this
            trex-eval no longer implements (resuming would mix two rules' grades in one run).
    """
    settings = RunStore(run_dir).read_manifest().settings
    old = superseded_rule(settings)
    if old is not None:
        raise StoreError(
            f"{run_dir} graded {old.benchmark} under {old.recorded}; this trex-eval implements "
            f"{old.current}, which decides differently, so the run cannot be continued",
            hint=f"re-grade it into a new directory (stored executions are reused): "
            f"trex-eval grade {run_dir} --rule {old.current} --out NEW_DIR",
        )
    return RunSpec.from_settings(settings)


def default_run_id(spec: RunSpec, *, now: dt.datetime | None = None) -> str:
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", spec.model.name)
    protocol = "" if spec.protocol == DEFAULT_PROTOCOL else f"-{spec.protocol}"
    # The suffix keeps two runs started in the same second apart.
    return f"{name}-{spec.prompt_set}{protocol}-{stamp}-{secrets.token_hex(2)}"


def _open_store(run_dir: Path, options: RunOptions, settings: RunSettings) -> RunStore:
    if (run_dir / MANIFEST).exists():
        previous = _with_versioned_rules(RunStore(run_dir).read_manifest().settings)
        if previous != settings:
            raise StoreError(
                f"{run_dir} holds a run with different settings: {settings_diff(previous, settings)}",
                hint="resume with exactly the same settings (`trex-eval run --resume DIR` reads them "
                "from the manifest), or choose another --out",
            )
        return RunStore.open(run_dir)
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    manifest = RunManifest(run_id=run_dir.name, created_at=now, command=options.command, settings=settings)
    return RunStore.create(run_dir, manifest)


def _with_versioned_rules(settings: RunSettings) -> RunSettings:
    """``settings`` with each benchmark's rule as its canonical ``name@version`` spec: runs written
    before structure rules carried their version recorded the bare name of the same rule."""
    entries = []
    for entry in settings.benchmarks:
        try:
            canonical = get_rule(entry.rule).spec
        except ConfigError:
            canonical = entry.rule
        entries.append(entry.model_copy(update={"rule": canonical}))
    return settings.model_copy(update={"benchmarks": tuple(entries)})


async def run_async(spec: RunSpec, options: RunOptions | None = None) -> RunResult:
    """Run or resume an evaluation (see module docstring); ``options`` default to :class:`RunOptions`."""
    options = options or RunOptions()
    run_dir = options.out or Path("results") / default_run_id(spec)
    early = early_pool(spec, options, run_dir)
    try:
        prepared = prepare_benchmarks(spec, data_dir=options.data_dir)
        settings = run_settings(spec, prepared)
        fresh = not (run_dir / MANIFEST).exists()
        store = _open_store(run_dir, options, settings)
    except BaseException:
        if early is not None:
            early.discard()
        raise
    try:
        try:
            session = Session(spec, options, prepared, store, early=early)
        except BaseException:
            if early is not None:
                early.discard()
            raise
        with session.progress.heartbeat():
            await session.execute()
        return _finish(session)
    except BaseException:
        store.close()
        if fresh:
            _remove_if_empty(run_dir)
        raise
    finally:
        store.close()


def early_pool(spec: RunSpec, options: RunOptions, run_dir: Path) -> EarlyPool | None:
    """The session's sandbox pool, starting now, while the benchmarks load and are planned; None
    where the session may not start one (grading on Ray, reused executions) or a benchmark's
    folder is not known yet (an unknown name: preparing it says what is wrong)."""
    if options.ray is not None or options.reuse_executions is not None:
        return None
    try:
        roots = [source_root(name, data_dir=options.data_dir) for name in dict.fromkeys(spec.benchmarks)]
    except (TrexError, OSError):
        return None
    # Known before loading only where the problems are limited (at most `limit` per benchmark).
    samples = None if spec.limit is None else spec.limit * spec.samples * len(roots)
    return EarlyPool(options, hidden_folders(run_dir, roots, options), samples=samples)


def _remove_if_empty(run_dir: Path) -> None:
    """Remove a run directory this session created when it holds no completion and no sample: a
    run that failed before its first sample (a missing key, an unreachable server) must not leave
    a manifest that refuses the retry as "different settings"."""
    for name in (COMPLETIONS, SAMPLES):
        path = run_dir / name
        if path.exists() and path.stat().st_size > 0:
            return
    for name in (MANIFEST, COMPLETIONS, SAMPLES, LOCK):
        (run_dir / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the user's own files are in it: keep the folder
        run_dir.rmdir()


def _finish(session: Session) -> RunResult:
    """Stamp the run finished, then summarise it (the summary quotes the manifest it is made
    from, ``finished_at`` included) and say whether it is a measurement."""
    store = session.store
    manifest = store.read_manifest()
    update: dict[str, object] = {
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    }
    # Which endpoint served what (every session's completions; this session's live counters).
    endpoints = endpoint_summary(
        (line.completion for line in store.iter_completions()), live=session.endpoint_stats
    )
    if endpoints is not None:
        update["provenance"] = {**manifest.provenance, "endpoints": endpoints}
    manifest = manifest.model_copy(update=update)
    store.write_manifest(manifest)
    records = list(session.kept.values()) if session.kept is not None else list(store.iter_samples())
    summary = summarize(manifest, records, path=store.root)
    store.write_summary(summary_json(summary), render_summary_markdown(summary))
    return RunResult(
        store.root,
        summary,
        session.graded_now,
        session.generated_now,
        executed_now=session.executed_now,
        reused_now=session.reused_now,
        failure=_failure(summary, records),
        notes=tuple(session.notes),
        replayed=session.spec.model.backend == "replay",
        records=tuple(records) if session.kept is not None else (),
    )


def _failure(summary: RunSummary, records: Sequence[SampleRecord]) -> str | None:
    """Why a finished run's numbers are not a measurement, or ``None``: every model request failed,
    or more than :data:`MAX_API_ERROR_RATE` of the expected samples did (the first error quoted)."""
    expected = sum(bench.problems * bench.samples_per_problem for bench in summary.benchmarks)
    failed = sum(bench.api_errors for bench in summary.benchmarks)
    if not expected or not failed or failed <= MAX_API_ERROR_RATE * expected:
        return None
    last: dict[SampleKey, SampleRecord] = {record.key: record for record in records}
    first = next((r.grade.reason for r in last.values() if r.grade.verdict is Verdict.API_ERROR), "")
    share = (
        "every model request failed"
        if failed == expected
        else (
            f"{failed} of {expected} model requests failed "
            f"({failed / expected:.0%} > {MAX_API_ERROR_RATE:.0%})"
        )
    )
    return f"{share}; first: {first}" if first else share
