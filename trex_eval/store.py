"""The run directory: the only place a run's results are written.

::

    <run-dir>/
      manifest.json       what was run, with what (written first, rewritten atomically)
      completions.jsonl   one line per generated completion, appended BEFORE grading, so a crash
                          never loses paid-for model output
      samples.jsonl       one SampleRecord per graded (benchmark, problem, sample), appended
      summary.json/.md    written when the run finishes

Both JSONL files are append-only and flushed after every line. A process killed mid-write can
leave a torn last line: readers ignore it and :meth:`RunStore.open` cuts it off before appending
again, so a resumed run never duplicates or loses a complete record. A torn line anywhere but at
the end means the file was edited by hand: :class:`~trex_eval.errors.StoreError`.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import Field, ValidationError, field_validator

from trex_eval.errors import StoreError
from trex_eval.records import (
    SCHEMA_VERSION,
    BackendSpec,
    Completion,
    FewShotStrategy,
    GraderKind,
    GurobiPolicy,
    Prompt,
    Record,
    SampleRecord,
    SamplingParams,
    SandboxLimits,
    canonical_gurobi_policy,
)

MANIFEST = "manifest.json"
COMPLETIONS = "completions.jsonl"
SAMPLES = "samples.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"

SampleKey = tuple[str, str, int]

RepairFeedbackMode = Literal["execution", "objective-differs"]
"""What repair feedback may tell the model (see :attr:`RunSettings.repair_feedback`)."""


class CompletionLine(Record):
    """A generated completion with the prompt that produced it (``completions.jsonl``).

    ``round`` is the repair round it answers (0: the sample's first answer; ``k >= 1``: the
    answer to the ``k``-th feedback message, whose whole conversation is ``prompt.messages``).
    One sample's rounds share its :attr:`key`; readers tell them apart by ``round``.
    """

    benchmark: str
    prompt: Prompt
    completion: Completion
    round: int = Field(default=0, ge=0)

    @property
    def key(self) -> SampleKey:
        return (self.benchmark, self.completion.problem_id, self.completion.sample_index)


class BenchmarkEntry(Record):
    """One benchmark as run: its identity (name, version, data sha256), the problems selected,
    how prompts were made and how samples were graded (``rule`` is the canonical ``name@version``
    spec, ``extractor`` the extractor name, ``limits`` the sandbox limits its programs ran under).

    ``source`` is how the run named it (a registered name, or the absolute path of its YAML file)
    so that a resumed or re-graded run finds it again; it is empty in runs written before it was
    recorded, and the name is used. ``skipped_rows`` counts data rows that could not become
    problems (``trex-eval benchmarks validate`` lists them).
    """

    name: str
    source: str = ""
    title: str
    version: int
    sha256: str
    problems: int
    skipped_rows: int = 0
    grader: GraderKind
    rule: str
    rule_description: str = ""
    extractor: str
    prompt_set: str
    template_sha256: str
    limits: SandboxLimits | None = None
    problem_ids: tuple[str, ...] | None = None
    """The problems selected, when the run graded a chosen subset (``grade --completions``: the ids
    the file holds) rather than the first ``problems`` of the benchmark; ``None``: the first ones."""

    @property
    def requested(self) -> str:
        """How to load this benchmark again: its recorded source, else its name."""
        return self.source or self.name


class RunSettings(Record):
    """What defines a run's results. Resuming requires identical settings.

    ``model`` is the resolved model preset (backend, served model or path, options: never a
    secret, API keys are referred to by environment variable name). ``protocol`` names a registered
    protocol (``default``: trex-eval's corrected grading; ``trex-compat``: the reference harness's
    rules, extractors and code rewrites). ``samples`` is the number of completions per
    problem; ``limit`` the first-n problems per benchmark (``None`` = all); ``extractor`` an
    extractor override (``None``: each benchmark's protocol default, recorded per benchmark);
    ``limits`` the sandbox limits asked for (``None``: the protocol's defaults; the limits each
    benchmark's programs ran under are in its entry).
    """

    model: BackendSpec
    sampling: SamplingParams
    samples: int = 1
    limit: int | None = None
    protocol: str = "default"
    prompt_set: str = "t-rex"
    extractor: str | None = None
    few_shot: int = 0
    few_shot_strategy: FewShotStrategy = "random"
    few_shot_source: str | None = None
    gurobi: GurobiPolicy = "auto"
    limits: SandboxLimits | None = None
    benchmarks: tuple[BenchmarkEntry, ...]
    replay_sha256: str | None = None
    """sha256 of the replayed completions file (``replay`` backend), so that a changed file never
    resumes into a run graded from the old one; ``None`` for other backends."""
    repair: int = Field(default=0, ge=0)
    """Repair rounds after the first answer (``run --repair N``; 0 = zero-shot)."""
    repair_feedback: RepairFeedbackMode = "execution"
    """What the repair feedback may say: ``execution`` (only what the program did) or
    ``objective-differs`` (also that a wrong answer differs from the expected one, never by how
    much: a study of label feedback, recorded as such)."""
    repair_template_sha256: str | None = None
    """sha256 of ``prompts/repair.j2`` when ``repair > 0`` (``None`` otherwise)."""

    @field_validator("gurobi", mode="before")
    @classmethod
    def _current_gurobi_name(cls, value: object) -> object:
        # Manifests written before the layer became gurobipy_highs say "compat": still load and resume.
        return canonical_gurobi_policy(value)


class RunManifest(Record):
    """Self-description of a run. ``settings`` must match on resume; ``provenance`` records the
    environment (harness version and git sha, package and solver versions, licence and sandbox
    reports, model backend description) and may differ between a run and its resumption."""

    schema_version: str = SCHEMA_VERSION
    run_id: str
    created_at: str
    finished_at: str | None = None
    command: tuple[str, ...] = ()
    settings: RunSettings
    provenance: dict[str, Any] = Field(default_factory=dict)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and rename (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _cut_torn_tail(path: Path) -> None:
    """Truncate ``path`` after its last newline (drops a line torn by a crash)."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        pos = size
        while pos > 0:
            step = min(65536, pos)
            handle.seek(pos - step)
            chunk = handle.read(step)
            newline = chunk.rfind(b"\n")
            if newline != -1:
                end = pos - step + newline + 1
                if end != size:
                    handle.truncate(end)
                return
            pos -= step
        handle.truncate(0)


def read_jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of every complete line; a torn final line (no newline) is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith("\n"):
                return
            if line.strip():
                yield number, line


LOCK = ".lock"


class RunStore:
    """Append-only writer/reader of one run directory. Thread-safe appends.

    ``RunStore(root)`` only reads. :meth:`create` and :meth:`open` are for the one process that
    writes the run: they hold an exclusive lock on the directory until :meth:`close`, so a second
    `run --resume` of the same directory fails instead of interleaving records.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._handles: dict[str, IO[str]] = {}
        self._dir_lock: IO[str] | None = None

    def _take_lock(self) -> None:
        handle = (self.root / LOCK).open("a")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise StoreError(
                f"another trex-eval process is writing {self.root}",
                hint="wait for it to finish (or stop it), then resume",
            ) from None
        self._dir_lock = handle

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, root: Path, manifest: RunManifest) -> RunStore:
        """Start a new run directory. Raises StoreError if it already holds a run."""
        if (root / MANIFEST).exists():
            raise StoreError(
                f"{root} already holds a run", hint=f"resume it with --resume {root}, or choose another --out"
            )
        root.mkdir(parents=True, exist_ok=True)
        store = cls(root)
        store._take_lock()
        if (root / MANIFEST).exists():
            store.close()
            raise StoreError(f"{root} already holds a run", hint="choose another --out")
        store.write_manifest(manifest)
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        """Open an existing run directory for resuming (cuts torn tails)."""
        if not (root / MANIFEST).is_file():
            raise StoreError(f"{root} is not a run directory (no {MANIFEST})")
        store = cls(root)
        store._take_lock()
        for name in (COMPLETIONS, SAMPLES):
            _cut_torn_tail(root / name)
        return store

    def close(self) -> None:
        with self._lock:
            for handle in self._handles.values():
                handle.close()
            self._handles.clear()
            if self._dir_lock is not None:
                self._dir_lock.close()
                self._dir_lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ manifest

    def read_manifest(self) -> RunManifest:
        path = self.root / MANIFEST
        try:
            manifest = RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError) as exc:
            raise StoreError(f"unreadable run manifest: {exc}", where=str(path)) from None
        if manifest.schema_version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise StoreError(
                f"run written with schema {manifest.schema_version}, this trex-eval reads {SCHEMA_VERSION}",
                where=str(path),
                hint="use the trex-eval version that wrote it",
            )
        return manifest

    def write_manifest(self, manifest: RunManifest) -> None:
        atomic_write_text(self.root / MANIFEST, manifest.model_dump_json(indent=2) + "\n")

    # ------------------------------------------------------------------ appends

    def _append(self, name: str, line: str) -> None:
        with self._lock:
            handle = self._handles.get(name)
            if handle is None:
                handle = (self.root / name).open("a", encoding="utf-8")
                self._handles[name] = handle
            handle.write(line + "\n")
            handle.flush()

    def append_completion(self, line: CompletionLine) -> None:
        self._append(COMPLETIONS, line.model_dump_json())

    def append_sample(self, record: SampleRecord) -> None:
        self._append(SAMPLES, record.model_dump_json())

    # ------------------------------------------------------------------ reads

    def _records(self, name: str) -> Iterator[tuple[str, int, str]]:
        path = self.root / name
        for number, text in read_jsonl_lines(path):
            yield f"{path}:{number}", number, text

    def iter_completions(self) -> Iterator[CompletionLine]:
        for where, _, text in self._records(COMPLETIONS):
            try:
                yield CompletionLine.model_validate_json(text)
            except ValidationError as exc:
                raise StoreError(
                    f"corrupt completion record: {exc.errors()[0]['msg']}", where=where
                ) from None

    def iter_samples(self) -> Iterator[SampleRecord]:
        """Every graded sample, last write wins for a repeated key (a re-grade appends)."""
        latest: dict[SampleKey, SampleRecord] = {}
        for where, _, text in self._records(SAMPLES):
            try:
                record = SampleRecord.model_validate_json(text)
            except ValidationError as exc:
                raise StoreError(f"corrupt sample record: {exc.errors()[0]['msg']}", where=where) from None
            latest[record.key] = record
        yield from latest.values()

    def write_summary(self, summary: dict[str, Any], markdown: str) -> None:
        atomic_write_text(self.root / SUMMARY_JSON, json.dumps(summary, indent=2, allow_nan=True) + "\n")
        atomic_write_text(self.root / SUMMARY_MD, markdown)
