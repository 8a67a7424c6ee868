"""What the reward server's scoring endpoints read from a parsed body and answer, apart from HTTP:
the rollouts of ``POST /v1/score`` and ``POST /get_reward`` (OpenRLHF), and the refusals
(:class:`HttpError`) the server sends for what a client got wrong.

Both endpoints read a problem the same way, in every form ``trex-eval export-rl`` writes a key
(:func:`~.problems.problem_from`'s forms): a mapping ``{"benchmark", "problem_id"}`` (the ``trl`` layout's
``benchmark`` and ``problem_id`` columns), its JSON text (``trex_problem``,
``reward_model.ground_truth``, ``extra_info.trex_problem``), verl's ``reward_model`` or
``extra_info`` column whole, or an inline problem (a mapping, its JSON text, or a bare optimum).
JSON text inside a body is parsed under the body's own bounds (:func:`~.intake.json_value`), and
the text keys of one body together may hold :data:`~.intake.MAX_JSON_VALUES` values at most:
text is no way around the limits the body itself is read under.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from trex_eval.errors import ConfigError
from trex_eval.reward.intake import MAX_JSON_VALUES, BadBody, json_value
from trex_eval.reward.problems import KEY_HOLDERS, problem_named
from trex_eval.reward.records import InlineProblem, ProblemKey, RewardRecord, RewardRequest

_SEPARATORS = (b"[", b"{", b",", b":")
"""Each JSON value but the outermost follows one of these bytes: their count bounds the values of
a text (strings' contents included, so never below the true count)."""


@dataclass(frozen=True)
class Reply:
    """An answer: status, body, its content type, extra headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


class HttpError(Exception):
    """A refusal: ``status``, the message the client reads, extra headers, and the outcome it is
    counted under in the metrics (default: by status)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        outcome: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers
        self.outcome = outcome or {429: "busy", 503: "draining"}.get(status, f"http_{status}")


def json_reply(status: int, payload: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """``payload`` as a JSON answer (UTF-8, not ASCII-escaped)."""
    return Reply(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), headers=headers)


class _Keys:
    """Reads the problems of one body, charging the values of keys sent as JSON text to one
    budget of :data:`~.intake.MAX_JSON_VALUES`."""

    def __init__(self) -> None:
        self.left = MAX_JSON_VALUES

    def problem(self, value: Any, *, where: str) -> ProblemKey | InlineProblem:
        """The problem ``value`` names (see the module docstring).

        Raises:
            HttpError: 400 naming ``where``: it names no problem, or its text is not JSON within
                the bounds.
        """
        if isinstance(value, Mapping) and "benchmark" not in value:
            holder = next((field for field in KEY_HOLDERS if field in value), None)
            if holder is not None:
                where, value = f"{where}.{holder}", value[holder]
        if isinstance(value, str):
            value = self._parsed(value, where=where)
        try:
            return problem_named(value, where=where)
        except ConfigError as error:
            raise HttpError(400, str(error)) from None

    def _parsed(self, text: str, *, where: str) -> Any:
        encoded = text.encode("utf-8", "surrogatepass")
        self.left -= sum(encoded.count(separator) for separator in _SEPARATORS)
        if self.left < 0:
            raise HttpError(
                400,
                f"{where}: the problem keys sent as JSON text hold more than {MAX_JSON_VALUES} JSON "
                "values together (the server's limit, MAX_JSON_VALUES): send them as JSON objects",
            )
        try:
            parsed = json_value(encoded, what="the key's text")
        except BadBody as error:
            raise HttpError(
                400,
                f'{where}: {error}; a key is {{"benchmark": NAME, "problem_id": ID}} (as '
                'export-rl writes it), or {"value": OPTIMUM} for an inline problem',
            ) from None
        if isinstance(parsed, str):  # text of text: read once, never again
            raise HttpError(400, f"{where}: JSON text of a string, not of a key: send the key once encoded")
        return parsed


def score_requests(payload: Mapping[str, Any], *, max_batch: int) -> list[RewardRequest]:
    """The rollouts of a ``/v1/score`` body: ``{"requests": [{"problem", "completion", "prompt"?}]}``.

    Raises:
        HttpError: 400 naming the field that is wrong; 413 for more than ``max_batch`` rollouts
            (checked before any is read: a retry of the same body never fits).
    """
    items = payload.get("requests")
    if not isinstance(items, list):
        raise HttpError(400, 'the body needs "requests": a list of {"problem", "completion"}')
    _within_batch(len(items), max_batch=max_batch, field="requests")
    keys = _Keys()
    requests = []
    for index, item in enumerate(items):
        where = f"requests[{index}]"
        if isinstance(item, dict) and "problem" in item:
            item = {**item, "problem": keys.problem(item["problem"], where=f"{where}.problem")}
        try:
            requests.append(RewardRequest.model_validate(item))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise HttpError(400, f"{where}.{field}: {first['msg']}") from None
    return requests


def _within_batch(count: int, *, max_batch: int, field: str) -> None:
    """Refuse a request of more than ``max_batch`` rollouts (``count``, the length of ``field``).

    Raises:
        HttpError: 413 naming ``--max-batch``: a retry of the same body never fits, so this is
            never the 429 of a full house.
    """
    if count > max_batch:
        raise HttpError(
            413,
            f'{count} rollouts in one request ("{field}"), over the server\'s limit of {max_batch} '
            "(--max-batch): send them in smaller requests",
        )


def openrlhf_requests(payload: Mapping[str, Any], *, max_batch: int) -> list[RewardRequest]:
    """The rollouts of a ``/get_reward`` body: ``{"query": [...], "prompts"?: [...], "labels":
    [...]}``, each label naming the problem, each completion the query less its prompt at the front.

    Raises:
        HttpError: 400 naming what is wrong; 413 for more than ``max_batch`` queries (checked
            before any label is read).
    """
    queries, prompts, labels = payload.get("query"), payload.get("prompts"), payload.get("labels")
    if not isinstance(queries, list) or not isinstance(labels, list) or len(labels) != len(queries):
        raise HttpError(
            400, 'the body needs "query" and "labels", lists of one length (each label names the problem)'
        )
    _within_batch(len(queries), max_batch=max_batch, field="query")
    if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(queries)):
        raise HttpError(400, '"prompts", when given, must be a list as long as "query"')
    keys = _Keys()
    requests = []
    for index, (query, label) in enumerate(zip(queries, labels, strict=True)):
        prompt = prompts[index] if prompts is not None else ""
        text = str(query)
        completion = text[len(prompt) :] if isinstance(prompt, str) and text.startswith(prompt) else text
        problem = keys.problem(label, where=f"labels[{index}]")
        requests.append(
            RewardRequest(
                problem=problem, completion=completion, prompt=prompt if isinstance(prompt, str) else ""
            )
        )
    return requests


def openrlhf_answer(records: Sequence[RewardRecord]) -> dict[str, object]:
    """``/get_reward``'s answer: ``rewards`` and ``scores`` (the same floats), and ``extra_logs``
    (``correct``, ``graded``: 1.0 or 0.0 per rollout)."""
    # OpenRLHF makes a tensor of the rewards: a rollout with no reward is paid 0.0 there,
    # and "graded" 0.0 in its extra logs says which.
    rewards = [0.0 if r.reward is None else r.reward for r in records]
    correct = [1.0 if r.verdict.value == "correct" else 0.0 for r in records]
    graded = [0.0 if r.reward is None else 1.0 for r in records]
    return {"rewards": rewards, "scores": rewards, "extra_logs": {"correct": correct, "graded": graded}}
