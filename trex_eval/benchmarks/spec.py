"""The schema of a benchmark YAML file (``benchmarks/*.yaml``; see ``docs/byo-benchmark.md``).

Data, not code: graders, rules and extractors are referred to by registered name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from trex_eval.records import GraderKind, SolveStatus


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceSpec(_Spec):
    """Where the rows are. ``root: data`` resolves ``path`` against the data directory (shipped
    benchmarks); ``root: file`` against the YAML file's folder (user benchmarks). ``rows`` is the
    expected row count, checked when set."""

    path: str
    root: Literal["data", "file"] = "file"
    rows: int | None = None


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


class BenchmarkSpec(_Spec):
    """A benchmark file (see docs/byo-benchmark.md). ``instance_file`` is the name the program
    finds its instance data under, in its working directory."""

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
    grader: GraderSpec
    prompt: PromptSpec

    @field_validator("instance_file")
    @classmethod
    def _plain_file_name(cls, value: str) -> str:
        if not value or "/" in value or "\\" in value or value in (".", ".."):
            raise ValueError("must be a plain file name such as data.json (no folders)")
        return value
