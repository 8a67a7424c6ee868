"""The repair environment (:mod:`.environment`, served at ``POST /v1/step``) in the shapes trainers
take, for a trainer that runs in another environment than the grader. Imports nothing of trex-eval
beyond :mod:`.client` (standard library and httpx)::

    # trex-eval serve -b nl4opt --port 8000          (the harness's environment)
    from trex_eval.reward.repair_client import RepairEnvironment, RepairTool

    trainer = GRPOTrainer(..., environment_factory=RepairEnvironment.factory("http://127.0.0.1:8000"))

:class:`RepairEnvironment` is TRL's ``environment_factory`` shape (TRL 1.16: ``reset(**row)``
called with the dataset row before each rollout, public methods offered to the model as tools,
``get_reward()`` read once the rollout is done); :class:`RepairTool` is verl's multi-turn tool
shape (verl 0.9 ``BaseTool``: ``create``, ``execute``, ``calc_reward``, ``release``; verl creates and
releases an instance around every call, so the episode's session lives in the trajectory's
``agent_data.extra_fields``).

Both send the program the policy passed to the tool as one turn of one server-side episode, and
hand the policy back only the feedback text (the ``--repair`` feedback, or that the episode is
over): never the record, whose verdict the policy must not read mid-rollout.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from trex_eval.reward.client import RemoteRewardError, RowsError, row_problems

SESSION_FIELD = "trex_repair_session"
"""verl: the ``agent_data.extra_fields`` key holding the trajectory's session id."""
REWARDS_FIELD = "trex_repair_rewards"
"""verl: the ``agent_data.extra_fields`` key holding every turn's policy reward (the last is the
episode's)."""


def as_completion(program: str) -> str:
    """A tool's ``program`` argument as the answer the server extracts from: fenced as a Python
    block unless it holds a fence already (the extractor then picks the block, as it does for
    an answer in prose)."""
    return program if "```" in program else f"```python\n{program}\n```"


class _Stepper:
    """Posts one ``/v1/step`` body and reads the answer (429 and 503-with-Retry-After waited out)."""

    def __init__(self, url: str, *, timeout_s: float, retries: int) -> None:
        self.url, self.timeout_s, self.retries = url.rstrip("/"), timeout_s, retries
        self._client: httpx.Client | None = None

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout_s + 30.0)
        body = {**body, "deadline_s": self.timeout_s}
        for _ in range(self.retries + 1):
            try:
                answer = self._client.post(f"{self.url}/v1/step", json=body)
            except httpx.HTTPError as error:
                raise RemoteRewardError(
                    f"the reward server at {self.url} could not be reached: {error}"
                ) from None
            if answer.status_code == 429 or (answer.status_code == 503 and "retry-after" in answer.headers):
                time.sleep(float(answer.headers.get("retry-after", "1")))
                continue
            break
        if answer.status_code != 200:
            raise RemoteRewardError(f"/v1/step answered {answer.status_code}: {answer.text[:2000]}")
        result: dict[str, Any] = answer.json()
        return result


def _problem_of(row: dict[str, Any]) -> Any:
    """The problem a dataset row names (``trex_problem``, or ``benchmark`` + ``problem_id``)."""
    try:
        (value,) = row_problems(1, {key: [value] for key, value in row.items()})
    except RowsError as error:
        raise RemoteRewardError(f"{error}: {error.hint}" if error.hint else str(error)) from None
    return json.loads(value) if isinstance(value, str) else value


class RepairEnvironment:
    """TRL's ``environment_factory`` shape over a ``trex-eval serve`` at ``url`` (see the module
    docstring). ``turns``: programs run per rollout at most (the server's bound,
    ``environment.MAX_TURNS``, applies); ``timeout_s``: seconds one turn may take (sent as its
    deadline). One instance serves one rollout at a time; TRL makes one per concurrent rollout
    and resets it between rollouts.

    ``answers`` keeps the server's answers of the current rollout (records included), for logs.
    """

    def __init__(self, url: str, *, turns: int = 3, timeout_s: float = 600.0, retries: int = 60) -> None:
        self._stepper = _Stepper(url, timeout_s=timeout_s, retries=retries)
        self._turns = turns
        self._problem: Any = None
        self._session: str | None = None
        self._done = False
        self.answers: list[dict[str, Any]] = []

    @classmethod
    def factory(
        cls, url: str, *, turns: int = 3, timeout_s: float = 600.0
    ) -> Callable[[], RepairEnvironment]:
        """The zero-argument callable ``GRPOTrainer(environment_factory=...)`` takes."""
        return lambda: cls(url, turns=turns, timeout_s=timeout_s)

    def reset(self, **row: Any) -> str | None:
        """Start a rollout for the problem the dataset ``row`` names (TRL passes the row's
        columns). Nothing is added to the prompt: it asks for the program already.

        Raises:
            RemoteRewardError: the row names no problem.
        """
        self._problem = _problem_of(row)
        self._session, self._done = None, False
        self.answers = []
        return None

    def run_program(self, program: str) -> str:
        """Run a complete Python program that models and solves the optimisation problem, and
        read what happened when it ran.

        Args:
            program: The complete Python program; it solves the model and prints the optimal value.

        Returns:
            What the run showed: the error or the solver's status to fix, or that the episode is over.
        """
        if self._problem is None:
            raise RemoteRewardError("run_program was called before reset: TRL resets each rollout first")
        if self._done:
            return "The episode is over: no more programs are run."
        body: dict[str, Any] = {"completion": as_completion(program)}
        if self._session is None:
            body.update(problem=self._problem, turns=self._turns)
        else:
            body["session"] = self._session
        answer = self._stepper.post(body)
        self._session, self._done = answer["session"], bool(answer["done"])
        self.answers.append(answer)
        return str(answer["feedback"])

    def get_reward(self) -> float | None:
        """The rollout's reward: the policy's reward of the last program run (0.0 when the
        rollout ran none; None, TRL's "no reward", when the server could not grade it)."""
        if not self.answers:
            return 0.0
        reward = self.answers[-1]["record"]["reward"]
        return None if reward is None else float(reward)


class _Schema:
    """A tool schema with what verl's tool loop reads of one (``function.name``, ``model_dump``)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self.function = type("Function", (), {"name": schema["function"]["name"]})()

    def model_dump(self, **_: Any) -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(json.dumps(self._schema))
        return copied


class ToolText:
    """A tool's answer as verl's tool loop reads it (``text``; no image or video)."""

    def __init__(self, text: str) -> None:
        self.text, self.image, self.video = text, None, None


SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "run_program",
        "description": "Run a complete Python program that models and solves the optimisation problem, "
        "and read what happened when it ran (the error or the solver's status to fix).",
        "parameters": {
            "type": "object",
            "properties": {"program": {"type": "string", "description": "The complete Python program."}},
            "required": ["program"],
        },
    },
}
"""The tool's schema when verl's tool config gives none."""


class RepairTool:
    """verl's multi-turn tool shape (``BaseTool``, duck-typed: verl's tool loop tells only its
    function tools apart) over ``/v1/step``. ``config`` is the tool's ``config`` of verl's tool
    YAML: ``url`` (required), ``turns`` (default 3), ``timeout_s`` (default 600). The dataset row
    names the problem in ``extra_info.tools_kwargs.run_program.create_kwargs.problem``.

    ``execute`` answers the feedback text and, as the step reward, the turn's ``progress``
    (what it adds over the best earlier turn: a broken-then-fixed program earns nothing);
    ``agent_data.extra_fields[REWARDS_FIELD]`` holds every turn's policy reward, the last being
    the episode's.
    """

    def __init__(self, config: dict[str, Any], tool_schema: Any = None) -> None:
        if not isinstance(config.get("url"), str):
            raise ValueError("RepairTool: the tool's config needs `url`: the trex-eval serve address")
        self.config = config
        self.tool_schema = tool_schema if tool_schema is not None else _Schema(SCHEMA)
        self.name: str = self.tool_schema.function.name
        self._stepper = _Stepper(config["url"], timeout_s=float(config.get("timeout_s", 600.0)), retries=60)
        self._turns = int(config.get("turns", 3))
        self._instances: dict[str, dict[str, Any]] = {}
        self._count = 0

    def get_openai_tool_schema(self) -> Any:
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolText]:
        self._count += 1
        key = instance_id or f"trex-repair-{self._count}"
        self._instances[key] = dict(kwargs.get("create_kwargs") or {})
        return key, ToolText("")

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolText, float, dict[str, Any]]:
        created = self._instances.get(instance_id, {})
        agent_data = kwargs.get("agent_data")
        fields: dict[str, Any] = getattr(agent_data, "extra_fields", None) or {}
        session = fields.get(SESSION_FIELD)
        body: dict[str, Any] = {"completion": as_completion(str(parameters.get("program", "")))}
        if session == "done":
            return ToolText("The episode is over: no more programs are run."), 0.0, {}
        if session is None:
            if "problem" not in created:
                raise ValueError(
                    "RepairTool: the row names no problem: "
                    "give tools_kwargs.run_program.create_kwargs.problem"
                )
            body.update(problem=created["problem"], turns=int(created.get("turns", self._turns)))
        else:
            body["session"] = session
        answer = await asyncio.to_thread(self._stepper.post, body)
        if agent_data is not None:
            agent_data.extra_fields[SESSION_FIELD] = "done" if answer["done"] else answer["session"]
            agent_data.extra_fields[REWARDS_FIELD] = answer["rewards"]
        return ToolText(str(answer["feedback"])), float(answer["progress"] or 0.0), {"turn": answer["turn"]}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._instances.pop(instance_id, None)
