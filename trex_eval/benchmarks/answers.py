"""Reading reference answers as benchmarks write them.

Labels come as floats, ints or strings: ``"3000.0"``, ``"1,234.5"``, ``"-0"``, ``"1.2e+03"``,
``"$ 25"``, ``"infeasible"``, ``"No Best Solution"``. :func:`parse_answer` turns each into an
:class:`~trex_eval.records.ObjectiveReference` or says precisely why it cannot. Pure.
"""

from __future__ import annotations

import math
import re

from trex_eval.records import ObjectiveReference, SolveStatus

# Status words other benchmark files use in place of a number (lower-cased, spaces collapsed).
_STATUS_LABELS: dict[str, SolveStatus] = {
    "infeasible": SolveStatus.INFEASIBLE,
    "no feasible solution": SolveStatus.INFEASIBLE,
    "no best solution": SolveStatus.INFEASIBLE,
    "no solution": SolveStatus.INFEASIBLE,
    "unbounded": SolveStatus.UNBOUNDED,
    "infeasible or unbounded": SolveStatus.INF_OR_UNBD,
    "inf_or_unbd": SolveStatus.INF_OR_UNBD,
}

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?$")
_DECORATION = re.compile(r"^[$€£¥]\s*|\s*(%|[$€£¥])$")


class AnswerError(ValueError):
    """A label that is neither a finite number nor a known status word."""


def parse_answer(raw: object) -> ObjectiveReference:
    """Parse one reference label.

    Numbers: ints, floats, and strings with optional sign, thousands separators (``1,234.5``),
    scientific notation, surrounding whitespace and a leading/trailing currency sign.
    ``-0``/``-0.0`` become ``0.0``. Status words (see ``_STATUS_LABELS``) become a reference
    with that status and no value.

    Raises:
        AnswerError: empty, NaN/infinite, boolean or unrecognised labels.
    """
    label = raw if isinstance(raw, str) else repr(raw)
    if isinstance(raw, bool) or raw is None:
        raise AnswerError(f"expected a number or a status word, got {raw!r}")
    if isinstance(raw, int | float):
        return _numeric(float(raw), label)
    if not isinstance(raw, str):
        raise AnswerError(f"expected a number or a status word, got {type(raw).__name__}")
    text = raw.strip()
    if not text:
        raise AnswerError("empty answer")
    status = _STATUS_LABELS.get(" ".join(text.lower().replace("-", " ").split()))
    if status is not None:
        return ObjectiveReference(status=status, value=None, label=raw)
    number = _DECORATION.sub("", text).replace(" ", "")
    if _THOUSANDS.match(number):
        number = number.replace(",", "")
    if not _NUMBER.match(number):
        raise AnswerError(f"cannot read {raw!r} as a number or a status word (infeasible, unbounded, ...)")
    return _numeric(float(number), label)


def _numeric(value: float, label: str) -> ObjectiveReference:
    if not math.isfinite(value):
        raise AnswerError(f"answer {label!r} is not finite")
    return ObjectiveReference(status=SolveStatus.OPTIMAL, value=value + 0.0, label=label)
