"""The run directory: the only place a run's results are written.

::

    <run-dir>/
      manifest.json       what was run, with what (written first, rewritten atomically)
      completions.jsonl   one line per generated completion, appended BEFORE grading, so a crash
                          never loses paid-for model output
      samples.jsonl       one SampleRecord per graded (benchmark, problem, sample), appended
      summary.json/.md    written when the run finishes

Both JSONL files are append-only and written unbuffered, one whole line at a time. A process
killed mid-write can leave a torn last line: readers ignore it and :meth:`RunStore.open` cuts it
off before appending again, so a resumed run never duplicates or loses a complete record; a write
that fails (a full disk) is cut back the same way before the :class:`StoreWriteError`.
A torn line anywhere but at the end means the file was edited by hand: ``StoreError``.

Storing a sample never fails for what the sample holds (:meth:`RunStore.append_sample`): its line
is held to the record budget in encoded bytes, and a record that cannot be serialised, or does
not read back, is stored as a harness-failure record (:mod:`trex_eval.budget`) and logged. A line
that another writer left with lone-surrogate escapes (not JSON a strict parser takes) is read
with those replaced (:func:`trex_eval.text.clean_tree`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator

from trex_eval.budget import RECORD_BYTES, fit_record, harness_failure
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
from trex_eval.text import clean_tree

logger = logging.getLogger("trex_eval.store")

MANIFEST = "manifest.json"
COMPLETIONS = "completions.jsonl"
SAMPLES = "samples.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"

SampleKey = tuple[str, str, int]

REWARD_LOG_BACKEND = "reward-server"
"""The backend a reward log's manifest names (``trex-eval serve --out``): its completions are a
trainer's rollouts, its prompts the trainer's own (:mod:`trex_eval.reward.runlog`)."""

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


class SizeBuckets(Record):
    """The size buckets of a benchmark as run: ``names`` smallest first, ``of`` problem id -> name."""

    names: tuple[str, ...]
    of: dict[str, str]


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
    size_buckets: SizeBuckets | None = None
    """Each problem's size bucket, for a benchmark whose rows name one (``scale`` in its YAML;
    :mod:`trex_eval.benchmarks.scale`): reports cut its scores by it. ``None``: no buckets."""

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


class StoreWriteError(StoreError):
    """A write to a run directory that the machine refused (a full disk, a quota, an I/O error,
    permissions changed under the run) after the run had started: not the input's fault, so the CLI
    exits 1 ("the machine"), not 2, and says how to continue the run in ``root``. The failed line
    was cut back first: every complete record is kept."""

    def __init__(self, message: str, *, root: Path, hint: str | None = None) -> None:
        self.root = root
        super().__init__(message, hint=hint)


def _write_hint(error: OSError, root: Path) -> str:
    """What to fix when the machine refused a write to the run directory ``root``."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"free space on the disk of {root}"
    if error.errno == errno.EFBIG:
        return "a file reached the size limit of this process (`ulimit -f`): raise it"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"restore write permission on {root}"
    return f"check the disk of {root} (the kernel log says more)"


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


_Model = TypeVar("_Model", bound=BaseModel)


def parse_line(model: type[_Model], text: str) -> _Model:
    """One stored line as ``model``. A line that the strict JSON parser refuses (lone-surrogate
    escapes, which another writer may leave) is read by :func:`json.loads` with every string
    cleaned; the strict parser's error is raised when that fails too.

    Raises:
        ValidationError: the line is not a ``model``.
    """
    try:
        return model.model_validate_json(text)
    except ValidationError as strict:
        try:
            return model.model_validate(clean_tree(json.loads(text)))
        except (ValueError, RecursionError):  # ValidationError is a ValueError
            raise strict from None


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
        self._handles: dict[str, io.FileIO] = {}
        self._dir_lock: IO[str] | None = None

    def _take_lock(self) -> None:
        # The holder removes the lock file when it closes, so a finished run keeps no empty .lock;
        # a lock taken on a file already removed (or replaced) by then is taken again on the new one.
        path = self.root / LOCK
        while True:
            handle = path.open("a")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise StoreError(
                    f"another trex-eval process is writing {self.root}",
                    hint="wait for it to finish (or stop it), then resume",
                ) from None
            try:
                current = path.stat().st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(handle.fileno()).st_ino:
                self._dir_lock = handle
                return
            handle.close()

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

    def release_files(self) -> None:
        """Close the append handles (the next append opens its file again); the directory lock is
        kept. For a writer holding many run directories at once (a reward log's epochs)."""
        with self._lock:
            for handle in self._handles.values():
                handle.close()
            self._handles.clear()

    def close(self) -> None:
        self.release_files()
        with self._lock:
            if self._dir_lock is not None:
                with contextlib.suppress(OSError):
                    (self.root / LOCK).unlink()  # still held: no other writer can be using it
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

    def _append(self, name: str, line: bytes) -> None:
        """Append ``line`` and a newline, unbuffered; a write that fails is cut back, so that the
        next line never follows half of this one.

        Raises:
            StoreWriteError: the file cannot be written (the disk, not the record).
        """
        path = self.root / name
        with self._lock:
            handle, start = self._handles.get(name), -1
            try:
                if handle is None:
                    handle = io.FileIO(path, "a")
                    self._handles[name] = handle
                start = os.fstat(handle.fileno()).st_size
                view = memoryview(line + b"\n")
                while view:
                    written = handle.write(view)
                    if not written:  # a regular file takes at least a byte, or raises
                        raise OSError(errno.EIO, "the file took no bytes")
                    view = view[written:]
            except OSError as error:
                if handle is not None and start >= 0:
                    with contextlib.suppress(OSError):
                        os.ftruncate(handle.fileno(), start)
                raise StoreWriteError(
                    f"cannot write {path}: {(error.strerror or str(error)).lower()}",
                    root=self.root,
                    hint=_write_hint(error, self.root),
                ) from None

    def append_completion(self, line: CompletionLine) -> bool:
        """Append ``line``; False (logged) when it cannot be serialised: the sample is then graded
        from memory and stored, and a resumed run asks the model again for it."""
        try:
            data = line.model_dump_json().encode("utf-8")
        except Exception as error:  # whatever the completion holds, the run goes on
            logger.error("completion %s not stored: %s: %s", line.key, type(error).__name__, error)
            return False
        self._append(COMPLETIONS, data)
        return True

    def append_sample(self, record: SampleRecord, *, max_bytes: int = RECORD_BYTES) -> SampleRecord:
        """Append ``record``, held to ``max_bytes`` encoded (:func:`~trex_eval.budget.fit_record`),
        and return the record as stored: ``record``, a cut copy, or, when it cannot be serialised,
        stays over the budget with every part cut, or does not read back, a harness-failure
        record (:func:`~trex_eval.budget.harness_failure`, logged).

        Raises:
            StoreWriteError: the file cannot be written; StoreError: not even the harness-failure record can
                be serialised (a sample identity that is not text).
        """
        try:
            stored, data = fit_record(record, max_bytes=max_bytes)
            parse_line(SampleRecord, data.decode("utf-8"))  # what resume and reports will read
        except Exception as error:  # whatever the record holds, the run goes on
            reason = f"{type(error).__name__}: {error}"
            logger.error("sample %s stored as a harness failure: %s", record.key, reason)
            try:
                stored = harness_failure(record, reason=reason)
                data = stored.model_dump_json().encode("utf-8")
            except Exception as again:
                raise StoreError(f"cannot store sample {record.key}: {again}", where=str(self.root)) from None
        self._append(SAMPLES, data)
        return stored

    # ------------------------------------------------------------------ reads

    def _records(self, name: str) -> Iterator[tuple[str, int, str]]:
        path = self.root / name
        for number, text in read_jsonl_lines(path):
            yield f"{path}:{number}", number, text

    def iter_completions(self) -> Iterator[CompletionLine]:
        for where, _, text in self._records(COMPLETIONS):
            try:
                yield parse_line(CompletionLine, text)
            except ValidationError as exc:
                raise StoreError(
                    f"corrupt completion record: {exc.errors()[0]['msg']}", where=where
                ) from None

    def iter_samples(self) -> Iterator[SampleRecord]:
        """Every graded sample, last write wins for a repeated key (a re-grade appends)."""
        latest: dict[SampleKey, SampleRecord] = {}
        for where, _, text in self._records(SAMPLES):
            try:
                record = parse_line(SampleRecord, text)
            except ValidationError as exc:
                raise StoreError(f"corrupt sample record: {exc.errors()[0]['msg']}", where=where) from None
            latest[record.key] = record
        yield from latest.values()

    def write_summary(self, summary: dict[str, Any], markdown: str) -> None:
        atomic_write_text(self.root / SUMMARY_JSON, json.dumps(summary, indent=2, allow_nan=True) + "\n")
        atomic_write_text(self.root / SUMMARY_MD, markdown)
