"""The documented stdout fallback for the objective value."""

from __future__ import annotations

import pytest

from trex_eval.sandbox.printed import printed_objective


@pytest.mark.parametrize(
    ("stdout", "value"),
    [
        ('{"status": 2, "optimal_value": 3000.0, "status_name": "OPTIMAL"}', 3000.0),
        ("Optimal objective value: 42.5", 42.5),
        ("Objective value = -7", -7.0),
        ("optimal value is $1,234.50", 1234.5),
        ("Obj Val: 1e3", 1000.0),
        ("Objective: 5\nsolver noise\nOptimal Value: 6.25\n", 6.25),
        ("Total cost: 99\nnothing labelled here", None),
        ("Optimal objective  8.000000000e+00", None),
        ("Objective: nan", None),
        ("", None),
    ],
)
def test_labelled_values_only(stdout: str, value: float | None) -> None:
    assert printed_objective(stdout) == value
