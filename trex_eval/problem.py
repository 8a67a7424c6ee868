"""The problem records (re-exported by :mod:`trex_eval.records`, where every stage imports them):
a benchmark item, its reference, and the data files it hands a program by reference."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from trex_eval.vocabulary import Record, SolveStatus


class InstanceLink(Record):
    """A data file a program finds in its working directory by reference: read-only, never copied
    per job (MIPLIB-NL's CSV files, up to tens of MB each).

    ``name`` is its relative path in the working directory (``data/costs.csv``); ``source`` the
    absolute host path it was loaded from; ``bytes`` its size and ``sha256`` its content's digest
    when the benchmark was loaded. The sandbox stages the file once, by ``sha256``, in a
    read-only store it binds into every worker (:mod:`trex_eval.sandbox.instances`) and puts a
    symbolic link at ``name``; a file whose content no longer matches is refused there. Never a
    label: a benchmark links only the data files its rows name.
    """

    name: str = Field(min_length=1, max_length=255)
    source: str = Field(min_length=1)
    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ObjectiveReference(Record):
    """Reference answer of an objective-graded problem.

    ``value`` is the optimal objective when ``status`` is ``optimal``; for an infeasible or
    unbounded reference ``value`` is ``None`` and only the same status can match.
    ``label`` keeps the answer exactly as the data file wrote it (e.g. ``"3000.0"``). ``sense``
    is the objective's sense where the benchmark states it (``None``: not stated); it decides
    the sign of a minimise-only solver's optimum (:mod:`trex_eval.grading.objective.sign`).
    """

    kind: Literal["objective"] = "objective"
    status: SolveStatus = SolveStatus.OPTIMAL
    value: float | None
    label: str
    sense: Literal["min", "max"] | None = None


class StructureReference(Record):
    """Reference of a structure-graded problem: a reference LP file (absolute path, as found when
    the benchmark was loaded; ``lp_sha256`` identifies its content) plus, where known, the solve
    status of that LP."""

    kind: Literal["structure"] = "structure"
    lp_path: str
    lp_sha256: str
    status: SolveStatus | None = None


Reference = Annotated[ObjectiveReference | StructureReference, Field(discriminator="kind")]


class Problem(Record):
    """One benchmark item, ready to be rendered into a prompt.

    Attributes:
        benchmark: benchmark name (``nl4opt``, ``optibench``, ``b4o-feasible``, ``b4o-orgeval``, ...).
        id: stable item id as a string (``"0"``; ``"BENCH4OPT_2"``).
        index: 0-based row position in the source file.
        question: the word problem text shown to the model.
        reference: objective or structure reference.
        instance_files: files placed in the program's working directory, name -> text content
            (``{"data.json": "..."}`` for Bench4Opt rows).
        instance_links: larger data files the program finds by reference in its working
            directory (:class:`InstanceLink`); empty for every benchmark that inlines its data.
            Records written before this field read as empty.
        data_path: the instance file path as the upstream data names it (prompt placeholder).
        reference_code: the benchmark's own reference program, if it ships one.
        twin_group: items sharing a value are wordings of one instance (ORGEval rows 2j/2j+1);
            few-shot selection never shows a twin of the current item.
        meta: extra string-valued fields from the data file (``wp_type``, ...).
    """

    benchmark: str
    id: str
    index: int
    question: str
    reference: Reference
    instance_files: dict[str, str] = Field(default_factory=dict)
    instance_links: tuple[InstanceLink, ...] = ()
    data_path: str | None = None
    reference_code: str | None = None
    twin_group: str | None = None
    meta: dict[str, str] = Field(default_factory=dict)
