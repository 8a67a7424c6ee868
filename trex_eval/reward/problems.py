"""Reading the problem a trainer's dataset row points at, in the forms the adapters receive.

A training dataset exported by ``trex-eval export-rl`` carries the key of each row's problem as
JSON (``{"benchmark": ..., "problem_id": ...}``) in a ``reward key`` column; a hand-made dataset
may instead carry ``benchmark`` and ``problem_id`` columns, or a reference value for an inline
problem. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from trex_eval.errors import ConfigError
from trex_eval.reward.client import REWARD_KEY, RowsError, completion_text, row_problems
from trex_eval.reward.records import InlineProblem, ProblemKey

__all__ = ["REWARD_KEY", "completion_text", "problem_from", "problems_from_columns"]


def problem_from(value: Any, *, where: str) -> ProblemKey | InlineProblem:
    """The problem ``value`` names: a :class:`ProblemKey` or :class:`InlineProblem`, a mapping or
    JSON text of one, or a bare number (an inline problem whose optimum is that number).

    Raises:
        ConfigError: ``value`` names no problem (``where`` says which column or field held it).
    """
    if isinstance(value, ProblemKey | InlineProblem):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return InlineProblem(value=float(value))
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ConfigError(
                f"{where}: {value[:80]!r} is not JSON naming a problem",
                hint='give {"benchmark": NAME, "problem_id": ID}, or {"value": OPTIMUM} (inline)',
            ) from None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return InlineProblem(value=float(value))
    if isinstance(value, Mapping):
        model: type[ProblemKey] | type[InlineProblem] = ProblemKey if "benchmark" in value else InlineProblem
        try:
            return model.model_validate(dict(value))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(row)"
            raise ConfigError(f"{where}: field {field}: {first['msg']}") from None
    raise ConfigError(
        f"{where}: a {type(value).__name__} names no problem",
        hint=f'give a "{REWARD_KEY}" column holding {{"benchmark": NAME, "problem_id": ID}}',
    )


def problems_from_columns(count: int, columns: Mapping[str, Any]) -> list[ProblemKey | InlineProblem]:
    """The problems of ``count`` rows from a trainer's dataset columns (lists, one value per
    row): :data:`REWARD_KEY`, else ``benchmark`` + ``problem_id`` (:func:`.client.row_problems`).

    Raises:
        ConfigError: neither form is there, a column's length is not ``count``, or a value names
            no problem.
    """
    try:
        values = row_problems(count, columns)
    except RowsError as error:
        raise ConfigError(str(error), hint=error.hint or None) from None
    column = f"column {REWARD_KEY}, " if REWARD_KEY in columns else ""
    return [problem_from(value, where=f"{column}row {i}") for i, value in enumerate(values)]
