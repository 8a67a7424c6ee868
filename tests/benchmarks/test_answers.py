from __future__ import annotations

import pytest

from trex_eval.benchmarks.answers import AnswerError, parse_answer
from trex_eval.records import SolveStatus


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("3000.0", 3000.0),
        (" 1,234,567.5 ", 1234567.5),
        ("-0", 0.0),
        ("-0.0", 0.0),
        (-0.0, 0.0),
        ("1.2e+03", 1200.0),
        ("$ 25", 25.0),
        ("7.5%", 7.5),
        (42, 42.0),
        (".5", 0.5),
        ("225.00000000000003", 225.00000000000003),
    ],
)
def test_numbers(raw: object, value: float) -> None:
    ref = parse_answer(raw)
    assert ref.status is SolveStatus.OPTIMAL and ref.value == value
    assert str(ref.value) != "-0.0"


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("infeasible", SolveStatus.INFEASIBLE),
        ("No Best Solution", SolveStatus.INFEASIBLE),
        ("  UNBOUNDED ", SolveStatus.UNBOUNDED),
        ("infeasible-or-unbounded", SolveStatus.INF_OR_UNBD),
    ],
)
def test_status_words(raw: str, status: SolveStatus) -> None:
    ref = parse_answer(raw)
    assert ref.status is status and ref.value is None and ref.label == raw


@pytest.mark.parametrize("raw", ["", "n/a", "1,23", "nan", float("inf"), True, None, [1], "12 apples"])
def test_rejects(raw: object) -> None:
    with pytest.raises(AnswerError):
        parse_answer(raw)
