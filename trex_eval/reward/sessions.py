"""``POST /v1/step``: repair episodes (:mod:`.environment`) over HTTP, for any trainer.

==============================================  ===================================================
``{"problem": KEY, "completion": TEXT,          opens an episode and takes its first turn:
"turns"?: N, "deadline_s"?: S}``                ``{"session": ID, "turn": 1, "turns": N, "done",
                                                "feedback", "reward", "progress", "failure",
                                                "rewards", "record"}`` (:class:`~.environment.StepAnswer`
                                                with the session id)
``{"session": ID, "completion": TEXT,           the episode's next turn, the same answer
"deadline_s"?: S}``
==============================================  ===================================================

``KEY`` takes every form ``/v1/score`` takes (:func:`~.endpoints.score_requests`). An episode's
session id is ``secrets.token_urlsafe`` (:data:`ID_BYTES` random bytes): it cannot be guessed, and
it is the only handle on the episode. An episode is forgotten when it ends (``done``), and when
no turn was asked of it for ``idle_timeout_s``; a later step naming it is a 404 that says so.

Bounds: :data:`MAX_SESSIONS` live episodes (a new one past it: 429 with ``Retry-After``); turns
per episode at most :data:`~.environment.MAX_TURNS` (400 past it); one turn at a time per
episode (a step while the episode's previous turn is graded: 409); each turn within the
server's ``deadline_s`` (or the body's, when smaller), else it is not graded and the episode ends
without a reward. While the server drains, a step is a 503.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trex_eval.errors import TrexError
from trex_eval.protocols.repair import RepairTemplate
from trex_eval.reward.endpoints import HttpError, score_requests
from trex_eval.reward.environment import DEFAULT_TURNS, RepairEpisode, checked_turns
from trex_eval.reward.service import RewardService

MAX_SESSIONS = 1024
"""Live episodes at most, server-wide (default)."""

IDLE_TIMEOUT_S = 600.0
"""Seconds an episode may wait for its next turn before it is forgotten (default)."""

ID_BYTES = 24
"""Random bytes of a session id (``secrets.token_urlsafe``: 32 characters)."""

RETRY_AFTER_S = 5
"""The ``Retry-After`` of a refusal for a full session table."""

_KNOWN = frozenset({"session", "problem", "completion", "turns", "deadline_s", "prompt"})


@dataclass
class _Live:
    episode: RepairEpisode
    last_used: float


class RepairSessions:
    """The live repair episodes of one server; see the module docstring. ``clock``: monotonic
    seconds (a test's to set)."""

    def __init__(
        self,
        service: RewardService,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.max_sessions, self.idle_timeout_s, self._clock = max_sessions, idle_timeout_s, clock
        self._live: dict[str, _Live] = {}
        self._template: RepairTemplate | None = None

    def __len__(self) -> int:
        return len(self._live)

    async def step(self, payload: Mapping[str, Any]) -> dict[str, object]:
        """The answer to one ``/v1/step`` body (already parsed as a JSON object).

        Raises:
            HttpError: 400 (a bad body, an unknown problem, turns out of bounds), 404 (an unknown,
                finished or expired session), 409 (the episode's previous turn is still graded),
                429 (the session table is full), 503 (the server drains).
        """
        if self.service.draining:
            raise HttpError(503, "the server is shutting down", headers=(("retry-after", "5"),))
        unknown = sorted(str(key)[:40] for key in payload if key not in _KNOWN)
        if unknown:
            raise HttpError(
                400, f"/v1/step: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_KNOWN))}"
            )
        completion = payload.get("completion")
        if not isinstance(completion, str):
            raise HttpError(400, '/v1/step: the body needs "completion": the policy\'s answer as text')
        deadline = self._deadline(payload.get("deadline_s"))
        self._expire()
        session = payload.get("session")
        if session is None:
            session, live = self._open(payload, deadline)
        else:
            live = self._find(session, payload)
        if live.episode.busy:
            raise HttpError(
                409, "/v1/step: this session's previous turn is still being graded: wait for its answer"
            )
        live.episode.deadline_s = deadline
        live.last_used = self._clock()
        try:
            answer = await live.episode.step(completion)
        finally:
            live.last_used = self._clock()
        if answer.done:
            self._live.pop(session, None)
        if answer.record.reward is None and answer.record.reason.startswith("harness failure"):
            self.service.report(f"/v1/step: {answer.record.problem_id}: {answer.record.reason}")
        return {"session": session, **answer.model_dump(mode="json")}

    def _deadline(self, value: Any) -> float:
        limit = self.service.limits.deadline_s
        if value is None:
            return limit
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e300:
            raise HttpError(
                400,
                f'/v1/step: "deadline_s" must be a positive, finite number of seconds (at most {limit:g} '
                f"is used), not {str(value)[:40]}",
            )
        return float(min(value, limit))

    def _open(self, payload: Mapping[str, Any], deadline: float) -> tuple[str, _Live]:
        if "problem" not in payload:
            raise HttpError(
                400,
                '/v1/step: name a "session" to continue an episode, or a "problem" to open one',
            )
        if len(self._live) >= self.max_sessions:
            raise HttpError(
                429,
                f"/v1/step: {len(self._live)} repair sessions are live, the server's limit: finish "
                f"or abandon some (idle ones are forgotten after {self.idle_timeout_s:g} s), then "
                f"retry after {RETRY_AFTER_S} s",
                headers=(("retry-after", str(RETRY_AFTER_S)),),
                outcome="sessions_full",
            )
        (request,) = score_requests(
            {"requests": [{"problem": payload["problem"], "completion": ""}]}, max_batch=1
        )
        try:
            turns = checked_turns(payload.get("turns", DEFAULT_TURNS), where="/v1/step")
            target = self.service.scorer.target(request.problem)
        except TrexError as error:
            raise HttpError(400, str(error)) from None
        if self._template is None:
            self._template = RepairTemplate()
        episode = RepairEpisode(
            self.service.scorer, target, template=self._template, turns=turns, deadline_s=deadline
        )
        session = secrets.token_urlsafe(ID_BYTES)
        live = _Live(episode, self._clock())
        self._live[session] = live
        return session, live

    def _find(self, session: object, payload: Mapping[str, Any]) -> _Live:
        if not isinstance(session, str):
            raise HttpError(400, '/v1/step: "session" must be the text a first step answered')
        if "problem" in payload or "turns" in payload:
            raise HttpError(
                400, '/v1/step: a step of a live session names no "problem" or "turns" (its first did)'
            )
        live = self._live.get(session)
        if live is None:
            raise HttpError(
                404,
                "/v1/step: no live repair session has this id: it never existed, its episode ended "
                f"(done), or it waited more than {self.idle_timeout_s:g} s for a turn; open a new "
                'one with a "problem"',
                outcome="unknown_session",
            )
        return live

    def _expire(self) -> None:
        """Forget the episodes idle for longer than ``idle_timeout_s`` (none being graded)."""
        cutoff = self._clock() - self.idle_timeout_s
        for session, live in list(self._live.items()):
            if live.last_used < cutoff and not live.episode.busy:
                del self._live[session]
