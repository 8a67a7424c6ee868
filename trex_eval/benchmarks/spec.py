"""The schema of a benchmark YAML file (``benchmarks/*.yaml``; see ``docs/byo-benchmark.md``).

Data, not code: graders, rules and extractors are referred to by registered name.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from trex_eval.records import GraderKind, SolveStatus


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceSpec(_Spec):
    """Where the rows are. ``root: data`` resolves ``path`` against the data directory (shipped
    benchmarks); ``root: file`` against the YAML file's folder (user benchmarks); ``root: source``
    against the folder of public repository ``repository`` (``owner/name``) in the sources
    directory (see :func:`trex_eval.benchmarks.data.source_dir`), pinned in ``data_manifest.json``.
    ``rows`` is the expected row count, checked when set.

    ``format`` reads ``path`` as that format whatever its suffix (several upstream ``.json``
    files are JSON Lines). ``layout: folders``: ``path`` is a folder of one sub-folder per problem
    (those matching ``folder_glob``, in natural order); ``folder_files`` maps a field name to the
    file of each sub-folder that holds it (a ``.json`` object's keys become ``<field>.<key>``
    fields); the sub-folder name is the field ``folder``.
    """

    path: str
    root: Literal["data", "file", "source"] = "file"
    repository: str | None = None
    rows: int | None = None
    format: Literal["jsonl", "json", "csv", "parquet"] | None = None
    layout: Literal["rows", "folders"] = "rows"
    folder_glob: str = "*"
    folder_files: dict[str, str] = {}

    @model_validator(mode="after")
    def _repository_with_source_root(self) -> SourceSpec:
        if (self.root == "source") != (self.repository is not None):
            raise ValueError("source.repository (owner/name) is required with root: source, and only then")
        if self.layout == "folders" and not self.folder_files:
            raise ValueError("layout: folders needs folder_files (field -> file name)")
        return self


class FieldMap(_Spec):
    """Source field names. ``id: null`` numbers rows 0..n-1. ``answer`` is the objective label;
    ``instance`` a path (relative to the source file's folder) of a file the program gets as
    ``instance_file``; ``instance_inline`` a field whose value (object or JSON text) is that file.
    A row whose instance field is absent or empty has no instance file."""

    id: str | None = None
    question: str
    answer: str | None = None
    instance: str | None = None
    instance_inline: str | None = None
    reference_code: str | None = None
    reference_lp: str | None = None
    meta: tuple[str, ...] = ()
    answer_status: str | None = None
    answer_values: str | None = None


class LabelSpec(_Spec):
    """How this benchmark's labels are written, and which label version they are.

    ``version`` names the label set (``original``, ``sirl-fixed``, ...): it is part of the
    benchmark's identity. ``sentinels`` maps a label text (compared after stripping) that means
    "no optimum" to the reference status it becomes; such a label is never read as a number.
    ``decimals``: the labels are rounded to that many decimals (a rule may honour it; recorded in
    each problem's ``meta["label_decimals"]``). ``answer_status`` (a field mapping) holds a status
    word (``optimal``, ``infeasible``, ...): any status but ``optimal`` makes the reference that
    status. ``answer_values`` (a field mapping) holds a multi-value answer ``{quantity: value}``:
    the objective is its ``objective`` entry (``last``: the last one), the whole dict is kept in
    ``meta["answer_values"]`` (JSON) for rules that grade every queried value.
    """

    version: str = "original"
    sentinels: dict[str, SolveStatus] = {}
    decimals: int | None = None
    objective: Literal["last"] = "last"
    list_labels: bool = False
    unlabelled: Literal["error", "skip"] = "error"
    """``skip``: a row without a label (blank answer field, or an ``optimal`` status without a
    value) is left out of the benchmark and listed in ``Benchmark.skipped``; ``source.rows``
    counts the rows kept. Declared where the upstream data has such rows, so they are documented."""
    """Labels are written as a one-element list (``"[18.0]"``, OptiMind's CSVs): its element is the label."""


class StatusSource(_Spec):
    """Rows of another file whose ids have a known reference solve status."""

    path: str
    id_field: str = "id"
    status: SolveStatus


class TwinSpec(_Spec):
    """Rows with equal values of field ``by`` are wordings of one instance."""

    by: str


class GraderSpec(_Spec):
    """Grader kind, default rule and extractor, and the overrides a protocol reads.

    ``rule`` and ``extractor`` are what the default protocol uses; ``compat_rule`` and
    ``compat_extractor`` override, for this benchmark, what ``--protocol trex-compat`` uses
    (``None``: that protocol's own choice for the kind). ``rtol``/``atol`` override the objective
    rule's tolerances under the default protocol.
    """

    kind: GraderKind
    rule: str
    compat_rule: str | None = None
    extractor: str = "default"
    compat_extractor: str | None = None
    rtol: float | None = None
    atol: float | None = None


Placeholder = Literal["question", "data_path", "working_directory"]


class UpstreamPromptSpec(_Spec):
    """The upstream T-Rex template for this benchmark (path relative to the data directory).

    ``style: system-user`` splits the template on ``SYSTEM:``/``USER:``; ``user-only`` sends the
    whole template as one user message. ``substitutions`` maps literal placeholders to values.
    """

    template: str
    style: Literal["system-user", "user-only"]
    substitutions: dict[str, Placeholder]


class PromptSpec(_Spec):
    """``task`` selects the project's own templates (``prompts/sets.yaml``); ``upstream`` is the
    ``t-rex`` prompt set. A run asking for ``t-rex`` on a benchmark without upstream templates uses
    ``default_set`` instead (and records it)."""

    task: Literal["solve", "solve_with_data", "structure"]
    upstream: UpstreamPromptSpec | None = None
    default_set: str = "neutral"


class ByReferenceSpec(_Spec):
    """Instances whose problem and data are separated (MIPLIB-NL): one folder each (``source.layout:
    folders``) holding a JSON instance file and the data files it names.

    The question is the ``fields.question`` text with each ``{name}`` placeholder filled from the
    instance's ``parameters`` object, followed by each data file's path and ``description`` (its
    schema) from the instance's ``files`` object (``{key: {path, description}}``); never the
    data. The program finds the instance file, without the ``withhold`` keys (the label), under
    every name of ``names``, and each data file at its ``path`` by reference
    (:class:`~trex_eval.records.InstanceLink`), read-only. ``instance`` is the field of
    ``source.folder_files`` that holds the instance file. A folder that lacks a data file its
    instance names is left out with that reason (``Benchmark.skipped``); ``source.rows`` counts
    it, as a pull of the full data brings it back. ``max_bytes`` bounds one instance's data
    files (a larger instance is a row error).
    """

    instance: str
    names: tuple[str, ...] = ("instance.json",)
    withhold: tuple[str, ...] = ()
    parameters: str = "parameters"
    files: str = "files"
    max_bytes: int = 1 << 30
    folders: tuple[str, ...] = ()
    """Empty folders the working directory starts with (each holds an empty ``.keep``):
    MIPLIB-NL's reference programs write ``./logs/log.txt``, as their upstream runner made ``logs/``."""

    @field_validator("names")
    @classmethod
    def _plain_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        if not names or any(not n or "/" in n or "\\" in n or n in (".", "..") for n in names):
            raise ValueError("must be one or more plain file names such as problem.json (no folders)")
        return names


class SizeBucket(_Spec):
    """One size bucket of a :class:`ScaleSpec`: instances whose reference model has fewer than
    ``below`` variables and fewer than ``below`` constraints (``None``: the last bucket, every
    larger or unknown size) get ``memory_mib`` for their program and ``record_mib`` for their
    sample's record, whose half holds the captured matrix the harness re-solves
    (:class:`~trex_eval.records.SandboxLimits`)."""

    name: str
    below: int | None = None
    memory_mib: int = 2048
    record_mib: int = 16


class ScaleSpec(_Spec):
    """The size of each instance and how jobs are bounded by it (:mod:`trex_eval.benchmarks.scale`).

    ``sizes`` is a CSV of reference-model sizes, relative to the benchmark file's folder;
    ``buckets`` are in increasing order, the last without ``below``."""

    sizes: str
    buckets: tuple[SizeBucket, ...]

    @field_validator("buckets")
    @classmethod
    def _ordered(cls, buckets: tuple[SizeBucket, ...]) -> tuple[SizeBucket, ...]:
        bounds = [b.below for b in buckets]
        if not buckets or bounds[-1] is not None or None in bounds[:-1]:
            raise ValueError("must end with one bucket without 'below' (the rest), every other with one")
        known = [b for b in bounds if b is not None]
        if any(a >= b for a, b in itertools.pairwise(known)):
            raise ValueError("'below' must increase from bucket to bucket")
        if len({b.name for b in buckets}) != len(buckets):
            raise ValueError("bucket names must differ")
        return buckets


class BenchmarkSpec(_Spec):
    """A benchmark file (see docs/byo-benchmark.md). ``instance_file`` is the name the program
    finds its instance data under, in its working directory.

    ``family`` groups the label versions of one benchmark (``mamo-complexlp`` for
    ``mamo-complexlp`` and ``mamo-complexlp@sirl-fixed``); ``labels.version`` names the version;
    ``suites`` the built-in suites it belongs to (``t-rex``, ``sirl``, ``orlm``); ``licence`` the
    upstream licence as stated (or ``none stated``). ``by_reference``: the instances keep their
    data in files the program reads in place (:class:`ByReferenceSpec`); ``scale``: each row's
    reference-model size, size bucket and memory (:class:`ScaleSpec`)."""

    name: str
    title: str
    version: int = 1
    description: str = ""
    upstream_target: str | None = None
    source: SourceSpec
    fields: FieldMap
    instance_file: str = "data.json"
    twins: TwinSpec | None = None
    reference_status: StatusSource | None = None
    by_reference: ByReferenceSpec | None = None
    scale: ScaleSpec | None = None
    grader: GraderSpec
    prompt: PromptSpec
    family: str | None = None
    labels: LabelSpec = LabelSpec()
    suites: tuple[str, ...] = ()
    licence: str | None = None

    @field_validator("instance_file")
    @classmethod
    def _plain_file_name(cls, value: str) -> str:
        if not value or "/" in value or "\\" in value or value in (".", ".."):
            raise ValueError("must be a plain file name such as data.json (no folders)")
        return value


def known_keys(section: Sequence[str]) -> tuple[str, ...]:
    """The keys the mapping at ``section`` of a benchmark file accepts (``()``: the top level;
    ``("fields",)``: the field mapping), in schema order. Empty where ``section`` is not a
    section of the schema (an unknown key, or a free mapping such as ``source.folder_files``)."""
    model: type[BaseModel] = BenchmarkSpec
    for key in section:
        if key.isdigit():  # an item of a list section (``scale.buckets.0``): the item's keys
            continue
        field = model.model_fields.get(key)
        nested = _model_in(field.annotation) if field is not None else None
        if nested is None:
            return ()
        model = nested
    return tuple(model.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema section an annotation holds (``LabelSpec``, ``TwinSpec | None``), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in get_args(annotation) if (m := _model_in(arg)) is not None), None)
