"""The problems a reward scorer knows: benchmark rows by key and inline problems, each with the
plan or rule that grades it, and the folders programs must not see.

Shared by :class:`~.scorer.RewardScorer` and :class:`~.ray_pool.RayRewardPool` (which checks
every key in the calling process before a rollout travels to an actor). Reads benchmark files
(:meth:`Catalogue.open`, and a shipped benchmark on first use); grades nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.benchmarks import Benchmark, load_benchmark
from trex_eval.benchmarks.data import resolve_data_dir, sources_root
from trex_eval.benchmarks.spec import BenchmarkSpec, FieldMap, GraderSpec, PromptSpec, SourceSpec
from trex_eval.errors import ConfigError, DataError
from trex_eval.grading import Rule
from trex_eval.protocols import DEFAULT_PROTOCOL, protocol_spec
from trex_eval.protocols.conventions import reward_refusal
from trex_eval.protocols.plan import EvaluationPlan, plan_for
from trex_eval.records import GraderKind, ObjectiveReference, Problem
from trex_eval.reward.records import InlineProblem, ProblemKey
from trex_eval.sandbox.isolation import REQUESTS

ACCEPT_WEAK_ISOLATION = (
    "`trex-eval serve --isolation {level}`, ScorerSettings(isolation='{level}'), "
    "or `isolation: {level}` in verl's reward_kwargs"
)
"""How a user accepts an isolation level below bubblewrap for rewards (named in the refusal)."""

ACCEPT_CONVENTIONS = (
    "`trex-eval serve --allow-conventions`, ScorerSettings(allow_conventions=True), "
    "or `allow_conventions: true` in verl's reward_kwargs"
)
"""How a user accepts a protocol's convention options for rewards (named in the refusal)."""

INLINE_BENCHMARK = "inline"
"""The ``benchmark`` of records of :class:`~.records.InlineProblem` requests."""

INLINE_SHA256 = hashlib.sha256(b"").hexdigest()
"""The data digest of inline problems (no file: the empty data's)."""


@dataclass(frozen=True)
class ScorerSettings:
    """What a :class:`RewardScorer` grades by.

    ``policy``: a reward policy spec (:mod:`.policy`); ``protocol``: the grading protocol of
    benchmark rows (``default``, ``trex-compat``, ...); ``rule``: an objective rule spec overriding
    the benchmarks' own (and the rule of inline problems, default ``strict``); ``benchmarks``:
    benchmarks loaded (and whose folders are hidden) at start-up; ``data_dir``: as ``--data-dir``
    (None: the usual search); ``workers``: sandbox lanes; ``isolation``: ``auto`` (default:
    bubblewrap, else the scorer refuses to start) or a level named to accept it knowingly
    (``bwrap``, ``unshare``, ``rlimits``: exactly that level, or the scorer refuses to start; see
    :data:`ACCEPT_WEAK_ISOLATION` and docs/rl-reward.md for what each guarantees a reward);
    ``diagnose``: say why each failing rollout failed (``grade.diagnosis``, exactly as ``run
    --diagnose`` does: the same :class:`~trex_eval.protocols.judge.SampleJudge`, reference
    programs run in the scorer's sandbox where a benchmark ships them; never changes a reward; off
    by default, as it costs grading time that a reward alone does not need); ``any_benchmark``:
    the scope of problem keys. False (default): a key must name one of ``benchmarks`` (by the name
    given or the benchmark's own name), else the call fails naming the key, the benchmarks served
    and this setting; True: a key may name any other benchmark whose files are hidden already (a
    shipped one under the data directory), loaded on first use (``trex-eval serve --any-benchmark``).
    Inline problems are in every scope. ``show_reference``: let records and reward logs quote the
    reference (its value in reasons, the reference's rows and values in diagnoses and evidence),
    for evaluation logs; off by default, when a record says only whether the rollout matches the
    reference under its rule (:mod:`.labels`; ``trex-eval serve --show-reference``).
    ``allow_conventions``: grade under a protocol whose convention options pay for nothing
    (``no-best-solution``, ``zero-band``, ``after-solve``, ``preload``:
    :mod:`trex_eval.protocols.conventions`); False (default): such a protocol is refused when the
    settings are made, naming the options and :data:`ACCEPT_CONVENTIONS`. ``protocol`` is kept as
    its canonical text (options with their versions).
    """

    policy: str = "binary"
    protocol: str = "default"
    rule: str | None = None
    benchmarks: tuple[str, ...] = ()
    data_dir: Path | None = None
    workers: int = 2
    isolation: str = "auto"
    diagnose: bool = False
    any_benchmark: bool = False
    show_reference: bool = False
    allow_conventions: bool = False

    def __post_init__(self) -> None:
        # A reward paid for a matched "No Best Solution" of a program that never solved, or for a
        # value in a zero band, pays for nothing: refused unless the user accepts it by name.
        refused = reward_refusal(self.protocol, allowed=self.allow_conventions, accept=ACCEPT_CONVENTIONS)
        if refused is not None:
            raise ConfigError(refused, where="reward settings: protocol")
        object.__setattr__(self, "protocol", protocol_spec(self.protocol))
        if self.isolation not in REQUESTS:
            # Never a silent fallback: a misspelt level must not become the weakest one.
            raise ConfigError(
                f"unknown isolation level {self.isolation!r} in the reward settings",
                hint=f"one of: {', '.join(REQUESTS)} (auto: bwrap or refuse to start)",
            )

    @classmethod
    def from_mapping(cls, fields: Mapping[str, Any], *, what: str = "reward settings") -> ScorerSettings:
        """Settings from plain values (verl's ``reward_kwargs``, a Ray actor's arguments): lists
        for ``benchmarks``, text for ``data_dir``.

        Raises:
            ConfigError: a key that is not a field (the message calls the mapping ``what``).
        """
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ConfigError(
                f"unknown {what}: {', '.join(unknown)}", hint=f"known: {', '.join(sorted(known))}"
            )
        values = dict(fields)
        if "benchmarks" in values:
            values["benchmarks"] = tuple(values["benchmarks"])
        if values.get("data_dir") is not None:
            values["data_dir"] = Path(values["data_dir"])
        return cls(**values)

    def as_mapping(self) -> dict[str, Any]:
        """The settings as plain values, which :meth:`from_mapping` reads back."""
        values = dataclasses.asdict(self)
        values["benchmarks"] = list(self.benchmarks)
        values["data_dir"] = None if self.data_dir is None else str(self.data_dir)
        return values


@dataclass(frozen=True)
class Target:
    """One problem ready to grade, with the plan that grades it (an inline problem's is
    :meth:`Catalogue.inline_plan`'s)."""

    benchmark: str
    problem: Problem
    plan: EvaluationPlan
    key: ProblemKey | InlineProblem
    """The problem as the request named it (what travels to a Ray actor)."""

    @property
    def inline(self) -> bool:
        """Whether the request gave the problem itself (:class:`~.records.InlineProblem`)."""
        return isinstance(self.key, InlineProblem)

    @property
    def rule_spec(self) -> str:
        """``name@version`` of the rule that grades it."""
        return self.plan.rule.spec


def inline_plan(rule: str) -> EvaluationPlan:
    """The plan of inline problems: graded by objective rule ``rule`` under the ``default``
    protocol whatever protocol grades benchmark rows (an inline problem has no benchmark file for
    another protocol's rewrites to read): the ``default`` extractor, the program run unchanged with
    the request's instance files beside it, expected to solve something, under the default sandbox
    limits.

    Raises:
        ConfigError: an unknown rule, or one that does not grade objectives.
    """
    spec = BenchmarkSpec(
        name=INLINE_BENCHMARK,
        title="Inline problems (each request gave its label)",
        source=SourceSpec(path="-"),
        fields=FieldMap(question="question"),
        grader=GraderSpec(kind=GraderKind.OBJECTIVE, rule=rule),
        prompt=PromptSpec(task="solve"),
    )
    # No file behind it: the paths name none, and the digest is the empty data's (the reward
    # log's inline entries record the same).
    nowhere = Path(f"<{INLINE_BENCHMARK}>")
    benchmark = Benchmark(
        spec=spec, problems=(), root=nowhere, data_root=None, sha256=INLINE_SHA256, spec_path=nowhere
    )
    return plan_for(benchmark, protocol=DEFAULT_PROTOCOL, rule=rule)


class Catalogue:
    """Benchmarks loaded for ``settings`` (see :class:`ScorerSettings`); call :meth:`open` first.

    Raises (from the constructor): ConfigError for an unknown rule.
    """

    def __init__(self, settings: ScorerSettings) -> None:
        self.settings = settings
        self.inline_plan = inline_plan(settings.rule or "strict")
        """The plan of every inline problem (:func:`inline_plan`)."""
        self._lock = threading.Lock()
        self._plans: dict[str, tuple[EvaluationPlan, dict[str, Problem]]] = {}
        self.hidden: tuple[Path, ...] = ()
        """Folders hidden from programs: the data directory, the pinned sources, each named benchmark's."""
        self.data_dir: Path | None = None
        self._served: dict[str, str] = {}
        """What a key may call a benchmark named at start-up (the name given, and the benchmark's
        own name) -> the name it was loaded under."""

    @property
    def inline_rule(self) -> Rule:
        """The rule of inline problems (their plan's)."""
        return self.inline_plan.rule

    def open(self) -> None:
        """Find the data and load the named benchmarks.

        Raises:
            DataError, BenchmarkError: the data or a named benchmark cannot be found or read.
        """
        with self._lock:
            self.data_dir = self._find_data_dir()
            hidden = [] if self.data_dir is None else [self.data_dir, sources_root(self.data_dir)]
            for name in self.settings.benchmarks:
                plan, _ = self._load(name)
                hidden.append(plan.benchmark.root)
                self._served[name] = name
                self._served.setdefault(plan.benchmark.name, name)
            self.hidden = tuple(dict.fromkeys(path.resolve() for path in hidden))

    def rules(self) -> dict[str, str]:
        """Benchmark -> ``name@version`` of its rule, for the benchmarks loaded so far."""
        with self._lock:
            return {name: plan.rule.spec for name, (plan, _) in sorted(self._plans.items())}

    def plans(self) -> tuple[EvaluationPlan, ...]:
        """The plans of the benchmarks loaded so far."""
        with self._lock:
            return tuple(plan for plan, _ in self._plans.values())

    def target(self, problem: ProblemKey | InlineProblem) -> Target:
        """The problem ready to grade.

        Raises:
            ConfigError: a benchmark outside the scope (not named at start-up, without
                ``any_benchmark``; or, with it, one whose files are not hidden), or an unknown
                benchmark or problem id.
        """
        if isinstance(problem, InlineProblem):
            label = "" if problem.value is None else repr(problem.value)
            reference = ObjectiveReference(status=problem.status, value=problem.value, label=label)
            record = Problem(
                benchmark=INLINE_BENCHMARK,
                id=problem.problem_id,
                index=0,
                question=problem.question,
                reference=reference,
                instance_files=dict(problem.files),
            )
            return Target(INLINE_BENCHMARK, record, self.inline_plan, problem)
        with self._lock:
            served = self._served.get(problem.benchmark)
            if served is None and not self.settings.any_benchmark:
                raise self._out_of_scope(problem)
            loaded = self._plans.get(served or problem.benchmark)
            if loaded is None:
                loaded = self._load(problem.benchmark)
                root = loaded[0].benchmark.root.resolve()
                if not any(root.is_relative_to(hidden) for hidden in self.hidden):
                    del self._plans[problem.benchmark]
                    raise ConfigError(
                        f"benchmark '{problem.benchmark}' was not named when the scorer opened, and its "
                        f"files ({root}) are not hidden from the programs",
                        hint="name it in ScorerSettings(benchmarks=...) (or `trex-eval serve -b`)",
                    )
        plan, problems = loaded
        found = problems.get(problem.problem_id)
        if found is None:
            examples = ", ".join(repr(key) for key in list(problems)[:3])
            raise ConfigError(
                f"benchmark '{problem.benchmark}' has no problem '{problem.problem_id}'",
                hint=f"ids look like {examples}",
            )
        return Target(plan.benchmark.name, found, plan, problem)

    def _out_of_scope(self, problem: ProblemKey) -> ConfigError:
        """The refusal of a key naming a benchmark not served (the key's text cut short: it is
        the client's)."""
        key = json.dumps({"benchmark": problem.benchmark[:120], "problem_id": problem.problem_id[:120]})
        served = ", ".join(sorted(set(self._served.values()))) or "none (inline problems only)"
        return ConfigError(
            f"problem key {key} names benchmark {problem.benchmark[:120]!r}, which is not served "
            f"(served: {served})",
            hint="name it among the served benchmarks (`trex-eval serve -b`, "
            "ScorerSettings(benchmarks=...)), or widen the scope to every shipped benchmark "
            "(`trex-eval serve --any-benchmark`, ScorerSettings(any_benchmark=True), "
            "`any_benchmark: true` in verl's reward_kwargs)",
        )

    def _load(self, name: str) -> tuple[EvaluationPlan, dict[str, Problem]]:
        """Load and plan benchmark ``name`` (the caller holds the lock)."""
        bench = load_benchmark(name, data_dir=self.data_dir)
        rule = (
            self.settings.rule
            if self.settings.rule and bench.spec.grader.kind is GraderKind.OBJECTIVE
            else None
        )
        plan = plan_for(bench, protocol=self.settings.protocol, rule=rule)
        loaded = (plan, {problem.id: problem for problem in bench.problems})
        self._plans[name] = loaded
        return loaded

    def _find_data_dir(self) -> Path | None:
        try:
            return resolve_data_dir(self.settings.data_dir)
        except DataError:
            if self.settings.data_dir is not None:
                raise
            return None  # inline problems and BYO benchmarks need no data directory
