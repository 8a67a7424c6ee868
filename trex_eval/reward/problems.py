"""Reading the problem a trainer's dataset row points at, in the forms the adapters receive.

A training dataset exported by ``trex-eval export-rl`` carries the key of each row's problem as
JSON text (``{"benchmark": ..., "problem_id": ...}``): in its ``trex_problem`` column (``trl``
layout), and in ``reward_model.ground_truth`` and ``extra_info.trex_problem`` (``verl`` layout),
beside ``benchmark`` and ``problem_id`` columns (``trl``). A hand-made dataset may carry the key as
a mapping, or a reference value for an inline problem. :func:`problem_from` reads every one of
these forms, and so every entry point does (the adapters, ``/v1/score``, ``/get_reward``). Pure:
no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from trex_eval.errors import ConfigError
from trex_eval.reward.client import REWARD_KEY, RowsError, completion_text, row_problems
from trex_eval.reward.records import InlineProblem, ProblemKey

__all__ = [
    "KEY_HOLDERS",
    "REWARD_KEY",
    "completion_text",
    "problem_from",
    "problem_named",
    "problems_from_columns",
]


KEY_HOLDERS = (REWARD_KEY, "ground_truth")
"""The fields of ``export-rl``'s ``verl`` columns that hold the key: ``extra_info`` holds it in
``trex_problem``, ``reward_model`` in ``ground_truth``. Either mapping, given whole, names the
problem its field names."""


def problem_from(value: Any, *, where: str) -> ProblemKey | InlineProblem:
    """The problem ``value`` names: a :class:`ProblemKey` or :class:`InlineProblem`, a mapping or
    JSON text of one, a bare number (an inline problem whose optimum is that number), or a verl
    column holding one of these (a mapping with a :data:`KEY_HOLDERS` field and no ``benchmark``:
    ``extra_info``, ``reward_model``; one level only).

    Raises:
        ConfigError: ``value`` names no problem (``where`` says which column or field held it).
    """
    if isinstance(value, Mapping) and "benchmark" not in value:
        holder = next((field for field in KEY_HOLDERS if field in value), None)
        if holder is not None:
            return problem_named(value[holder], where=f"{where}.{holder}")
    return problem_named(value, where=where)


def problem_named(value: Any, *, where: str) -> ProblemKey | InlineProblem:
    """:func:`problem_from` of a value that is not a verl column (a mapping holding a
    :data:`KEY_HOLDERS` field is an inline problem with an unknown field here).

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
