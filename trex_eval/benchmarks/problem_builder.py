"""Turn a benchmark's source rows into :class:`~trex_eval.records.Problem` records, field by field
as its spec maps them (answers, statuses, reference files inside the benchmark folder), keeping
the digest of every file read. A row that cannot become a Problem raises :class:`RowProblem`
naming the field; :func:`~trex_eval.benchmarks.loading.load_benchmark` collects those per row."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trex_eval.benchmarks.answers import AnswerError, parse_answer
from trex_eval.benchmarks.by_reference import InstanceError, instance_parts
from trex_eval.benchmarks.rows import Row, read_rows
from trex_eval.benchmarks.spec import BenchmarkSpec
from trex_eval.records import (
    GraderKind,
    InstanceLink,
    ObjectiveReference,
    Problem,
    SolveStatus,
    StructureReference,
)


class RowProblem(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class DataAbsent(RowProblem):
    """A row left out because a data file it names is missing from this copy (not a bad row)."""


class ProblemBuilder:
    """Turns source rows into Problems; remembers the digest of every file it reads."""

    def __init__(self, spec: BenchmarkSpec, *, source_root: Path, data_dir: Path | None) -> None:
        self.spec = spec
        self.source_root = source_root
        # Resolved once, not per row: a realpath walk of the whole path is most of a row's cost.
        self._resolved_root = source_root.resolve()
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
        links: tuple[InstanceLink, ...] = ()
        meta_extra: dict[str, str] = {}
        if self.spec.by_reference is not None:
            folder = self.source_root / _text(values, "folder", required=True)
            try:
                parts = instance_parts(
                    self.spec.by_reference, folder=folder, question=question, values=values
                )
            except InstanceError as exc:
                if exc.absent:
                    raise DataAbsent(exc.field, self._absent(folder.name, exc.absent)) from None
                raise RowProblem(exc.field, exc.message) from None
            question, instance_files, links, meta_extra = (
                parts.question,
                parts.instance_files,
                parts.links,
                parts.meta,
            )
        reference = self._reference(values, pid)
        twin = None
        if self.spec.twins is not None and values.get(self.spec.twins.by) not in (None, ""):
            twin = "twin:" + hashlib.sha256(str(values[self.spec.twins.by]).encode()).hexdigest()[:16]
        meta = {key: str(values[key]) for key in fm.meta if values.get(key) not in (None, "")}
        meta.update(self._label_meta(values))
        meta.update(meta_extra)
        if fm.reference_lp is not None and values.get(fm.reference_lp):
            meta["reference_lp"] = str(values[fm.reference_lp])
        return Problem(
            benchmark=self.spec.name,
            id=pid,
            index=row.position,
            question=question,
            reference=reference,
            instance_files=instance_files,
            instance_links=links,
            data_path=data_path,
            reference_code=(_text(values, fm.reference_code, required=False) or None)
            if fm.reference_code
            else None,
            twin_group=twin,
            meta=meta,
        )

    def _absent(self, folder: str, names: tuple[str, ...]) -> str:
        """Why an instance is left out: its missing data files, each said to be fetched by
        ``data pull`` (the pin lists it, unhashed) or missing at the pinned commit as well."""
        unhashed: frozenset[str] = frozenset()
        if self.spec.source.root == "source":
            from trex_eval.benchmarks.data import load_sources

            pin = load_sources().get(self.spec.source.repository or "")
            unhashed = frozenset(pin.unhashed) if pin is not None else frozenset()
        base = posixpath.join(self.spec.source.path, folder)
        fetched = [name for name in names if posixpath.join(base, name) in unhashed]
        gaps = [name for name in names if name not in fetched]
        said = [f"data file absent in this copy: {', '.join(fetched)} (`trex-eval data pull` fetches it)"]
        said = said[: bool(fetched)]
        if gaps:
            said.append(f"data file absent at the pinned commit too (an upstream gap): {', '.join(gaps)}")
        return "; ".join(said)

    def _reference(self, values: Mapping[str, Any], pid: str) -> ObjectiveReference | StructureReference:
        fm = self.spec.fields
        if self.spec.grader.kind is GraderKind.STRUCTURE:
            if fm.reference_lp is None:
                raise RowProblem("reference_lp", "structure-graded benchmarks need fields.reference_lp")
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
                    raise RowProblem(fm.answer_status, f"unknown status {status_word!r}")
                return ObjectiveReference(status=status, value=None, label=status_word)
        if fm.answer_values is not None:
            answer: object = _objective_entry(values, fm.answer_values)
            field_name = fm.answer_values
        elif fm.answer is not None:
            answer, field_name = values.get(fm.answer), fm.answer
        else:
            raise RowProblem("answer", "objective-graded benchmarks need fields.answer")
        if answer is None or (isinstance(answer, float) and answer != answer):
            raise RowProblem(field_name, "missing")
        if labels.list_labels and isinstance(answer, str) and answer.strip().startswith("["):
            answer = _single_element(answer, field_name)
        sentinel = labels.sentinels.get(str(answer).strip())
        if sentinel is not None:
            # A sentinel means "no optimum": never a number, whatever digits it is written with.
            return ObjectiveReference(status=sentinel, value=None, label=str(answer))
        try:
            return parse_answer(answer)
        except AnswerError as exc:
            raise RowProblem(field_name, str(exc)) from None

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
        if not path.is_relative_to(self._resolved_root):
            raise RowProblem(field_name, f"path '{rel}' leaves the benchmark folder")
        if not path.is_file():
            raise RowProblem(field_name, f"file not found: {path}")
        return self._read(path)

    def _relative_text(self, rel: str, field_name: str) -> str:
        try:
            return self._relative_bytes(rel, field_name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RowProblem(field_name, f"'{rel}' is not UTF-8 text: {exc.reason}") from None


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
        raise RowProblem(field_name, f"cannot read {text!r} as a one-element list") from None
    if not isinstance(value, list) or len(value) != 1:
        raise RowProblem(field_name, f"expected a one-element list, got {text!r}")
    return value[0]


def _objective_entry(values: Mapping[str, Any], key: str) -> object:
    """The objective of a multi-value answer ``{quantity: value}``: its last entry (ReSocratic
    writes the objective last; checked against SIRL's objective-only copy of the same rows)."""
    answers = values.get(key)
    if not isinstance(answers, dict) or not answers:
        raise RowProblem(key, "expected a non-empty object {quantity: value}")
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
            raise RowProblem(key, "missing")
        return ""
    if not isinstance(value, str | int | float):
        raise RowProblem(key, f"expected text, got {type(value).__name__}")
    text = str(value)
    if required and not text.strip():
        raise RowProblem(key, "empty")
    return text
