"""Reward terms: the parts a reward policy (:mod:`.policy`) weighs. Pure.

Each term reads one graded rollout (:class:`Graded`) and earns a value in [0, 1], with a line
saying why; a policy multiplies it by the term's ``weight`` and combines the terms. Every term
reads the harness's own evidence (the extracted program, the sandbox's execution, the harness's
re-solve, the grade), never what the program printed about itself.

==========  ==========================================================================================
kind        value
==========  ==========================================================================================
format      the tags and fences the prompt asks for. ``scoring: share`` (default): the share of the
            listed items present (a tag: ``<t>`` or ``<t ...>`` once, ``</t>`` once, after it; a
            fence: a closed fenced block of that language). ``scoring: sirl``: SIRL's own format
            score over exactly three tags, halved to [0, 1] (:func:`sirl_format`)
extracted   1 when a program was extracted from the completion
executed    1 when the program ran to its end without an error (solving or not)
feasible    1 when the program ran without an error, its last solve was re-solved by the harness
            to the optimum it claimed, the grade is ``correct`` or ``wrong``, and the captured
            model passes the trivial-model guard (:mod:`.guard`)
objective   1 when the grade passed (the objective within the problem's rule, or the structure
            rule's match)
diagnosis   ``credit[category]`` of a failing rollout's diagnosis (0 where the grade passed, or no
            category is listed); needs a diagnosing scorer (``ScorerSettings(diagnose=True)``)
==========  ==========================================================================================
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from trex_eval.records import (
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    Problem,
    Program,
    SolveRecord,
    SolveStatus,
    Verdict,
)
from trex_eval.reward.guard import GuardResult, uses_data
from trex_eval.vocabulary import Record

RAN = frozenset({ExecStatus.OK, ExecStatus.NO_SOLVE})
"""Execution statuses of a program that ran to its end without an error (solving or not)."""

_TAG_NAME = r"^[A-Za-z][A-Za-z0-9_.-]{0,31}$"
_FENCE_LANGUAGE = r"^[A-Za-z0-9_+.-]{1,32}$"


@dataclass(frozen=True)
class Graded:
    """One graded rollout as the terms read it: the problem, the completion ``text``, the program
    extracted from it, its ``execution`` (None when nothing ran: no program) and its grade."""

    problem: Problem
    text: str
    program: Program
    execution: Execution | None
    grade: Grade

    @property
    def ran(self) -> bool:
        """Whether the program ran to its end without an error (:data:`RAN`)."""
        return self.execution is not None and self.execution.status in RAN

    @property
    def verified_solve(self) -> SolveRecord | None:
        """The last solve of a program that ran cleanly, where the harness re-solved its captured
        model to the same optimal value; None otherwise."""
        solve = None if self.execution is None or not self.ran else self.execution.last_solve
        if (
            solve is not None
            and solve.verification == "match"
            and solve.status is SolveStatus.OPTIMAL
            and solve.verified_objective is not None
        ):
            return solve
        return None

    @functools.cached_property
    def guard(self) -> GuardResult:
        """The trivial-model guard on the verified solve's model (computed once per rollout)."""
        solve = self.verified_solve
        if solve is None:
            return GuardResult(False, "no solve re-solved by the harness to the optimum claimed")
        return uses_data(solve.model, self.problem)

    @property
    def feasible(self) -> bool:
        """What the ``feasible`` term pays (see the module docstring)."""
        return self.grade.verdict in (Verdict.CORRECT, Verdict.WRONG) and self.guard.passed


class _Term(Record):
    """What every term declares: an optional ``name`` (default: its kind; unique in a policy)
    and a finite ``weight`` ≥ 0 (default 1)."""

    name: str = Field(default="", pattern=r"^$|^[a-z][a-z0-9_]{0,31}$")
    weight: float = Field(default=1.0, ge=0.0, allow_inf_nan=False)

    @property
    def label(self) -> str:
        """The term's name in records: ``name``, else its kind."""
        return self.name or str(getattr(self, "kind"))  # noqa: B009 - every subclass declares it


class FormatTerm(_Term):
    kind: Literal["format"] = "format"
    tags: tuple[Annotated[str, Field(pattern=_TAG_NAME)], ...] = ()
    fences: tuple[Annotated[str, Field(pattern=_FENCE_LANGUAGE)], ...] = ()
    scoring: Literal["share", "sirl"] = "share"

    @model_validator(mode="after")
    def _items(self) -> FormatTerm:
        if not self.tags and not self.fences:
            raise ValueError("a format term needs tags or fences to look for")
        if self.scoring == "sirl" and (len(self.tags) != 3 or self.fences):
            raise ValueError(
                "scoring 'sirl' scores exactly three tags (SIRL's think, model, python) and no fences"
            )
        return self

    def score(self, graded: Graded) -> tuple[float, str]:
        if self.scoring == "sirl":
            first, middle, last = self.tags
            value = sirl_format(graded.text, first=first, middle=middle, last=last) / 2
            return value, f"SIRL's format score {2 * value:g} of 2"
        found = [tag for tag in self.tags if _tag_once(graded.text, tag)]
        found += [f"```{lang}" for lang in self.fences if _fenced(graded.text, lang)]
        total = len(self.tags) + len(self.fences)
        return len(found) / total, f"{len(found)} of {total} asked-for tags and fences present"


class ExtractedTerm(_Term):
    kind: Literal["extracted"] = "extracted"

    def score(self, graded: Graded) -> tuple[float, str]:
        if graded.program.code is None:
            return 0.0, "no program extracted"
        return 1.0, "a program was extracted"


class ExecutedTerm(_Term):
    kind: Literal["executed"] = "executed"

    def score(self, graded: Graded) -> tuple[float, str]:
        if graded.execution is None:
            return 0.0, "nothing ran"
        status = graded.execution.status.value
        return (
            (1.0, f"ran without error ({status})") if graded.ran else (0.0, f"did not run cleanly ({status})")
        )


class FeasibleTerm(_Term):
    kind: Literal["feasible"] = "feasible"

    def score(self, graded: Graded) -> tuple[float, str]:
        if graded.grade.verdict not in (Verdict.CORRECT, Verdict.WRONG):
            return 0.0, f"graded {graded.grade.verdict.value}"
        return (1.0 if graded.guard.passed else 0.0), graded.guard.detail


class ObjectiveTerm(_Term):
    kind: Literal["objective"] = "objective"

    def score(self, graded: Graded) -> tuple[float, str]:
        if graded.grade.passed:
            return 1.0, f"passed {graded.grade.rule}"
        return 0.0, f"{graded.grade.verdict.value} under {graded.grade.rule}"


class DiagnosisTerm(_Term):
    kind: Literal["diagnosis"] = "diagnosis"
    credit: dict[DiagnosisCategory, Annotated[float, Field(ge=0.0, le=1.0)]]

    def score(self, graded: Graded) -> tuple[float, str]:
        diagnosis = graded.grade.diagnosis
        if graded.grade.passed or diagnosis is None:
            return 0.0, "passed" if graded.grade.passed else "not diagnosed"
        return self.credit.get(diagnosis.category, 0.0), f"diagnosed {diagnosis.category.value}"


Term = Annotated[
    FormatTerm | ExtractedTerm | ExecutedTerm | FeasibleTerm | ObjectiveTerm | DiagnosisTerm,
    Field(discriminator="kind"),
]
"""One term of a policy, by its ``kind``."""


def _tag_once(text: str, tag: str) -> bool:
    opening = [m.start() for m in re.finditer(rf"<{re.escape(tag)}(?=[\s>])", text)]
    closing = [m.start() for m in re.finditer(rf"</{re.escape(tag)}>", text)]
    return len(opening) == 1 and len(closing) == 1 and opening[0] < closing[0]


def _fenced(text: str, language: str) -> bool:
    return (
        re.search(rf"```{re.escape(language)}[ \t]*\n.*?\n```", text, re.DOTALL | re.IGNORECASE) is not None
    )


def sirl_format(text: str, *, first: str = "think", middle: str = "model", last: str = "python") -> float:
    """SIRL's format score in [0, 2], as ``format_reward`` of Cardinal-Operations/SIRL,
    ``SIRLTrain/reward_func/batch_score_gurobi.py`` (commit 8caaad1) computes it: 2, less 1/8 for
    each of ``<first>``, ``</first>``, ``<middle`` (a prefix: attributes allowed), ``</middle>``
    and 1/4 for each of ``<last>``, ``</last>`` not present exactly once, less 1/3 for each
    order broken: ``</first>`` after the start of ``<middle``, ``</middle>`` or ``<last>``; a tag
    closing before it opens; ``<last>`` not after every other marker. A missing marker is at
    position -1, as ``str.find`` puts it there (SIRL's quirk, kept)."""
    markers = (
        (f"<{first}>", 1 / 8),
        (f"</{first}>", 1 / 8),
        (f"<{middle}", 1 / 8),
        (f"</{middle}>", 1 / 8),
        (f"<{last}>", 1 / 4),
        (f"</{last}>", 1 / 4),
    )
    minus = sum(weight for marker, weight in markers if text.count(marker) != 1)
    at = [text.find(marker) for marker, _ in markers]
    if at[1] > min(at[2:5]):
        minus += 1 / 3
    if any(at[i] > at[i + 1] for i in (0, 2, 4)):
        minus += 1 / 3
    if at[4] <= max(at[:4]):
        minus += 1 / 3
    return 2 - minus
