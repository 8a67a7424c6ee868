"""Benchmarks as data: ``benchmarks/*.yaml`` -> :class:`BenchmarkSpec` -> :class:`Benchmark` of Problems.

A benchmark YAML names its source file, how fields map onto a :class:`~trex_eval.records.Problem`,
the grader kind and default rule, and its prompts. It holds no code: graders, rules and
extractors are referred to by registered name. See ``docs/byo-benchmark.md`` for the schema.

Errors in a YAML file are reported with file, line and field. Errors in data rows are collected
per row (``Benchmark.row_errors``); with ``strict=True`` (the shipped benchmarks) any row error or
a row count different from ``source.rows`` aborts loading.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from trex_eval import config
from trex_eval.benchmarks import assets
from trex_eval.benchmarks.answers import AnswerError, parse_answer
from trex_eval.benchmarks.rows import Row, read_problem_folders, read_rows
from trex_eval.benchmarks.spec import (
    BenchmarkSpec,
)
from trex_eval.errors import BenchmarkError
from trex_eval.records import GraderKind, ObjectiveReference, Problem, SolveStatus, StructureReference


@dataclass(frozen=True)
class RowError:
    """A data row that could not become a Problem."""

    where: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: field '{self.field}': {self.message}"


@dataclass(frozen=True)
class Benchmark:
    """A loaded benchmark.

    ``root`` is the folder of the source file (instance and reference paths are relative to it);
    ``data_root`` the data directory (upstream templates live there) or ``None``.
    ``sha256`` digests the spec and every file read, for run provenance. ``skipped``: rows left
    out because they have no label (``labels.unlabelled: skip``).
    """

    spec: BenchmarkSpec
    problems: tuple[Problem, ...]
    root: Path
    data_root: Path | None
    sha256: str
    spec_path: Path
    row_errors: tuple[RowError, ...] = ()
    skipped: tuple[RowError, ...] = ()
    _by_id: dict[str, Problem] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    def __len__(self) -> int:
        return len(self.problems)

    def get(self, problem_id: str) -> Problem:
        """The problem with ``problem_id``. Raises BenchmarkError listing nearby ids if unknown."""
        if not self._by_id:
            self._by_id.update({p.id: p for p in self.problems})
        try:
            return self._by_id[problem_id]
        except KeyError:
            sample = ", ".join(p.id for p in self.problems[:3])
            raise BenchmarkError(
                f"no problem with id '{problem_id}' in benchmark '{self.name}'",
                hint=f"ids look like: {sample}, ... ({len(self.problems)} in all)",
            ) from None


# --------------------------------------------------------------------------- spec files


def shipped_spec_paths() -> dict[str, Path]:
    """Shipped benchmark name -> YAML path."""
    return {path.stem: path for path in sorted(assets.benchmarks_dir().glob("*.yaml"))}


def user_benchmarks_dir() -> Path:
    """Where ``trex-eval benchmarks add`` registers user benchmarks (``<config dir>/benchmarks``)."""
    return config.config_dir() / "benchmarks"


def user_spec_paths() -> dict[str, Path]:
    """Registered user benchmark name -> YAML path (the file name without ``.yaml``)."""
    folder = user_benchmarks_dir()
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def known_spec_paths() -> dict[str, Path]:
    """Shipped and registered benchmarks; a registered name never hides a shipped one."""
    return {**user_spec_paths(), **shipped_spec_paths()}


# libyaml's safe loader where PyYAML was built with it: ~10x faster over the 80-odd shipped files,
# the same documents and error marks.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_spec(path: Path) -> BenchmarkSpec:
    """Parse and validate one benchmark YAML.

    Raises:
        BenchmarkError: unreadable YAML or schema violation, located as ``file:line: field``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchmarkError(f"cannot read benchmark file: {exc.strerror}", where=str(path)) from exc
    try:
        raw = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise BenchmarkError(f"invalid YAML: {getattr(exc, 'problem', exc)}", where=where) from exc
    if not isinstance(raw, dict):
        raise BenchmarkError("a benchmark file must be a YAML mapping", where=str(path))
    try:
        return BenchmarkSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(str(part) for part in first["loc"])
        line = _yaml_line(text, loc)
        where = f"{path}:{line}" if line else str(path)
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise BenchmarkError(
            f"field '{'.'.join(loc)}': {first['msg']}{more}",
            where=where,
            hint="see docs/byo-benchmark.md for the benchmark file schema",
        ) from None


def _yaml_line(text: str, loc: Sequence[str]) -> int | None:
    """1-based line of the node at ``loc`` (or of its deepest existing parent)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            match = node.value[int(key)]
        else:
            match = None
        if match is None:
            break
        node, line = match, match.start_mark.line + 1
    return line


def resolve_spec_path(name_or_path: str, *, extra: Mapping[str, Path] | None = None) -> Path:
    """Path of a benchmark given its name (shipped or registered) or a path to a YAML file.

    Raises:
        BenchmarkError: unknown name (the message lists the known ones).
    """
    known = {**known_spec_paths(), **(extra or {})}
    if name_or_path in known:
        return known[name_or_path]
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    # Display names (`NL4OPT`, `B4O-Feasible`) differ from registry names only in case.
    folded = {name.casefold(): name for name in known}
    if name_or_path.casefold() in folded:
        return known[folded[name_or_path.casefold()]]
    close = difflib.get_close_matches(name_or_path.casefold(), list(folded), n=3, cutoff=0.6)
    guess = f" (did you mean {' or '.join(repr(folded[c]) for c in close)}?)" if close else ""
    raise BenchmarkError(
        f"unknown benchmark '{name_or_path}'{guess}",
        hint=f"known benchmarks: {', '.join(sorted(known))}; or pass a path to a benchmark .yaml file",
    )


def reads_data_dir(names: Sequence[str]) -> bool:
    """Whether any of these benchmarks (names or YAML paths) reads the T-Rex data directory.

    Raises:
        BenchmarkError: an unknown name or an invalid YAML.
    """
    return any(load_spec(resolve_spec_path(name)).source.root == "data" for name in names)


# --------------------------------------------------------------------------- loading


def load_benchmark(
    name_or_path: str,
    *,
    data_dir: Path | None,
    strict: bool | None = None,
    extra: Mapping[str, Path] | None = None,
) -> Benchmark:
    """Load a benchmark by name or YAML path.

    Args:
        name_or_path: shipped/registered name, or path to a YAML file.
        data_dir: the data directory; required for specs with ``source.root: data``.
        strict: abort on any row error or row-count mismatch. Default: True for shipped
            benchmarks, False for user files (bad rows are then reported and skipped).
        extra: additional name -> YAML path registrations (user benchmarks).

    Raises:
        BenchmarkError: bad spec, missing files, or (strict) bad rows.
    """
    spec_path = resolve_spec_path(name_or_path, extra=extra)
    spec = load_spec(spec_path)
    if strict is None:
        strict = spec_path.resolve().parent == assets.benchmarks_dir().resolve()
    base = _source_base(spec, spec_path, data_dir)
    source = (base / spec.source.path).resolve()
    if not source.exists():
        hint = (
            "run `trex-eval data pull` (it installs the pinned repositories too), or set TREX_SOURCES_DIR"
            if spec.source.root == "source"
            else "run `trex-eval data verify` to check the data directory, or fix source.path"
        )
        raise BenchmarkError(f"source data not found: {source}", where=f"{spec_path}: source.path", hint=hint)
    loader = _RowLoader(spec, source_root=source if source.is_dir() else source.parent, data_dir=data_dir)
    if spec.source.layout == "folders":
        rows, read = read_problem_folders(
            source, pattern=spec.source.folder_glob, files=spec.source.folder_files
        )
        for path in read:
            loader.remember(path)
    else:
        rows = read_rows(source, file_format=spec.source.format)
    problems: list[Problem] = []
    errors: list[RowError] = []
    skipped: list[RowError] = []
    seen: dict[str, str] = {}
    for row in rows:
        if row.error is None and spec.labels.unlabelled == "skip" and not loader.has_label(row):
            skipped.append(RowError(where=row.where, field="answer", message="no label: left out"))
            continue
        if row.error is not None:
            errors.append(RowError(where=row.where, field="(row)", message=row.error))
            continue
        try:
            problem = loader.problem(row)
        except _RowProblem as exc:
            errors.append(RowError(where=row.where, field=exc.field, message=exc.message))
            continue
        if problem.id in seen:
            errors.append(
                RowError(row.where, "id", f"duplicate id '{problem.id}' (first at {seen[problem.id]})")
            )
            continue
        seen[problem.id] = row.where
        problems.append(problem)
    if strict:
        if errors:
            listed = "\n    ".join(str(e) for e in errors[:10])
            raise BenchmarkError(
                f"{len(errors)} bad rows in benchmark '{spec.name}':\n    {listed}", where=str(spec_path)
            )
        if spec.source.rows is not None and len(problems) != spec.source.rows:
            raise BenchmarkError(
                f"expected {spec.source.rows} rows, found {len(problems)}",
                where=f"{spec_path}: source.rows",
                hint="the data directory may be from another snapshot: run `trex-eval data verify`",
            )
    digest = hashlib.sha256(spec_path.read_bytes())
    for file_digest in loader.file_digests(source):
        digest.update(file_digest.encode())
    return Benchmark(
        spec=spec,
        problems=tuple(problems),
        root=loader.source_root,
        data_root=data_dir,
        sha256=digest.hexdigest(),
        spec_path=spec_path,
        row_errors=tuple(errors),
        skipped=tuple(skipped),
    )


def _source_base(spec: BenchmarkSpec, spec_path: Path, data_dir: Path | None) -> Path:
    """The folder ``source.path`` is relative to (see :class:`~trex_eval.benchmarks.spec.SourceSpec`)."""
    if spec.source.root == "file":
        return spec_path.parent
    if spec.source.root == "source":
        from trex_eval.benchmarks.data import source_dir
        from trex_eval.errors import DataError

        try:
            return source_dir(spec.source.repository or "", data_dir)
        except DataError as exc:
            raise BenchmarkError(
                exc.message, where=f"{spec_path}: source.repository", hint=exc.hint
            ) from None
    if data_dir is None:
        raise BenchmarkError(
            "this benchmark reads the data directory but none was given", where=str(spec_path)
        )
    return data_dir


class _RowProblem(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class _RowLoader:
    """Turns source rows into Problems; remembers the digest of every file it reads."""

    def __init__(self, spec: BenchmarkSpec, *, source_root: Path, data_dir: Path | None) -> None:
        self.spec = spec
        self.source_root = source_root
        self._digests: dict[Path, str] = {}
        self._statuses = self._load_statuses(data_dir)

    def file_digests(self, source: Path) -> list[str]:
        files = sorted(p for p in source.iterdir() if p.is_file()) if source.is_dir() else [source]
        for path in files:
            self._read(path)
        return [
            f"{path.relative_to(self.source_root) if path.is_relative_to(self.source_root) else path.name}="
            f"{sha}"
            for path, sha in sorted(self._digests.items())
        ]

    def has_label(self, row: Row) -> bool:
        """Whether ``row`` has a label: a non-blank answer (or answer values), or a status other
        than ``optimal``."""
        fm, values = self.spec.fields, row.fields
        if fm.answer_status is not None:
            status = values.get(fm.answer_status)
            if not _blank(status) and str(status).strip().lower() != SolveStatus.OPTIMAL.value:
                return True
        key = fm.answer_values or fm.answer
        return key is not None and not _blank(values.get(key)) and values.get(key) != {}

    def remember(self, path: Path) -> None:
        """Count ``path`` (read by a folder layout) in the benchmark's digest."""
        self._read(path)

    def _read(self, path: Path) -> bytes:
        data = path.read_bytes()
        self._digests[path] = hashlib.sha256(data).hexdigest()
        return data

    def _load_statuses(self, data_dir: Path | None) -> dict[str, SolveStatus]:
        source = self.spec.reference_status
        if source is None:
            return {}
        base = data_dir if (self.spec.source.root == "data" and data_dir) else self.source_root
        return {
            str(row.fields[source.id_field]): source.status
            for row in read_rows(base / source.path)
            if source.id_field in row.fields
        }

    def problem(self, row: Row) -> Problem:
        fm = self.spec.fields
        values = row.fields
        pid = str(row.position) if fm.id is None else _text(values, fm.id, required=True)
        question = _text(values, fm.question, required=True)
        instance_files: dict[str, str] = {}
        data_path: str | None = None
        if fm.instance is not None and not _blank(values.get(fm.instance)):
            data_path = _text(values, fm.instance, required=True)
            instance_files[self.spec.instance_file] = self._relative_text(data_path, fm.instance)
        elif fm.instance_inline is not None and values.get(fm.instance_inline) not in (None, ""):
            inline = values[fm.instance_inline]
            instance_files[self.spec.instance_file] = (
                inline if isinstance(inline, str) else json.dumps(inline)
            )
        reference = self._reference(values, pid)
        twin = None
        if self.spec.twins is not None and values.get(self.spec.twins.by) not in (None, ""):
            twin = "twin:" + hashlib.sha256(str(values[self.spec.twins.by]).encode()).hexdigest()[:16]
        meta = {key: str(values[key]) for key in fm.meta if values.get(key) not in (None, "")}
        meta.update(self._label_meta(values))
        if fm.reference_lp is not None and values.get(fm.reference_lp):
            meta["reference_lp"] = str(values[fm.reference_lp])
        return Problem(
            benchmark=self.spec.name,
            id=pid,
            index=row.position,
            question=question,
            reference=reference,
            instance_files=instance_files,
            data_path=data_path,
            reference_code=(_text(values, fm.reference_code, required=False) or None)
            if fm.reference_code
            else None,
            twin_group=twin,
            meta=meta,
        )

    def _reference(self, values: Mapping[str, Any], pid: str) -> ObjectiveReference | StructureReference:
        fm = self.spec.fields
        if self.spec.grader.kind is GraderKind.STRUCTURE:
            if fm.reference_lp is None:
                raise _RowProblem("reference_lp", "structure-graded benchmarks need fields.reference_lp")
            lp_rel = _text(values, fm.reference_lp, required=True)
            content = self._relative_bytes(lp_rel, fm.reference_lp)
            return StructureReference(
                lp_path=str((self.source_root / lp_rel).resolve()),
                lp_sha256=hashlib.sha256(content).hexdigest(),
                status=self._statuses.get(pid),
            )
        labels = self.spec.labels
        if fm.answer_status is not None:
            status_word = _text(values, fm.answer_status, required=True).strip().lower()
            if status_word != SolveStatus.OPTIMAL.value:
                status = _status_word(status_word)
                if status is None:
                    raise _RowProblem(fm.answer_status, f"unknown status {status_word!r}")
                return ObjectiveReference(status=status, value=None, label=status_word)
        if fm.answer_values is not None:
            answer: object = _objective_entry(values, fm.answer_values)
            field_name = fm.answer_values
        elif fm.answer is not None:
            answer, field_name = values.get(fm.answer), fm.answer
        else:
            raise _RowProblem("answer", "objective-graded benchmarks need fields.answer")
        if answer is None or (isinstance(answer, float) and answer != answer):
            raise _RowProblem(field_name, "missing")
        if labels.list_labels and isinstance(answer, str) and answer.strip().startswith("["):
            answer = _single_element(answer, field_name)
        sentinel = labels.sentinels.get(str(answer).strip())
        if sentinel is not None:
            # A sentinel means "no optimum": never a number, whatever digits it is written with.
            return ObjectiveReference(status=sentinel, value=None, label=str(answer))
        try:
            return parse_answer(answer)
        except AnswerError as exc:
            raise _RowProblem(field_name, str(exc)) from None

    def _label_meta(self, values: Mapping[str, Any]) -> dict[str, str]:
        """What a rule may need to know about this row's label: its version, its rounding, a
        multi-value answer (JSON), and whether it is a sentinel."""
        labels, fm = self.spec.labels, self.spec.fields
        if self.spec.grader.kind is not GraderKind.OBJECTIVE:
            return {}
        meta = {"label_version": labels.version}
        if labels.decimals is not None:
            meta["label_decimals"] = str(labels.decimals)
        if fm.answer_values is not None and isinstance(values.get(fm.answer_values), dict):
            meta["answer_values"] = json.dumps(values[fm.answer_values], ensure_ascii=False)
        raw = values.get(fm.answer_values or fm.answer or "")
        if raw is not None and not isinstance(raw, dict) and str(raw).strip() in labels.sentinels:
            meta["label_sentinel"] = str(raw).strip()
        return meta

    def _relative_bytes(self, rel: str, field_name: str) -> bytes:
        path = (self.source_root / rel).resolve()
        if not path.is_relative_to(self.source_root.resolve()):
            raise _RowProblem(field_name, f"path '{rel}' leaves the benchmark folder")
        if not path.is_file():
            raise _RowProblem(field_name, f"file not found: {path}")
        return self._read(path)

    def _relative_text(self, rel: str, field_name: str) -> str:
        try:
            return self._relative_bytes(rel, field_name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _RowProblem(field_name, f"'{rel}' is not UTF-8 text: {exc.reason}") from None


_STATUS_WORDS = {status.value: status for status in SolveStatus}


def _status_word(word: str) -> SolveStatus | None:
    """A reference status from a status word (``infeasible``, ``unbounded``, ``inf_or_unbd``, ...)."""
    status = _STATUS_WORDS.get(word.replace(" ", "_"))
    if status is None:
        try:
            reference = parse_answer(word)
        except AnswerError:
            return None
        return reference.status if reference.value is None else None
    return status


def _single_element(text: str, field_name: str) -> object:
    """The element of a label written as a one-element JSON list (``"[18.0]"``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise _RowProblem(field_name, f"cannot read {text!r} as a one-element list") from None
    if not isinstance(value, list) or len(value) != 1:
        raise _RowProblem(field_name, f"expected a one-element list, got {text!r}")
    return value[0]


def _objective_entry(values: Mapping[str, Any], key: str) -> object:
    """The objective of a multi-value answer ``{quantity: value}``: its last entry (ReSocratic
    writes the objective last; checked against SIRL's objective-only copy of the same rows)."""
    answers = values.get(key)
    if not isinstance(answers, dict) or not answers:
        raise _RowProblem(key, "expected a non-empty object {quantity: value}")
    return list(answers.values())[-1]


def _blank(value: object) -> bool:
    """True for an absent cell: ``None``, whitespace-only text, or NaN (pandas' missing value)."""
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and value != value)
    )


def _text(values: Mapping[str, Any], key: str, *, required: bool) -> str:
    value = values.get(key)
    if value is None or (isinstance(value, float) and value != value):
        if required:
            raise _RowProblem(key, "missing")
        return ""
    if not isinstance(value, str | int | float):
        raise _RowProblem(key, f"expected text, got {type(value).__name__}")
    text = str(value)
    if required and not text.strip():
        raise _RowProblem(key, "empty")
    return text
