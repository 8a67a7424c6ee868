"""`trex-eval serve`: the verified grader as an HTTP reward server for RL training."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from trex_eval.cli._common import err, out
from trex_eval.cli.options import (
    DEFAULT_WORKERS,
    PANEL_GRADING,
    PANEL_OUTPUT,
    BenchmarksOption,
    DataDirOption,
    ProtocolOption,
    WorkersOption,
    protocol_name,
    split_list,
    workers_count,
)
from trex_eval.errors import ConfigError
from trex_eval.protocols import DEFAULT_PROTOCOL

if TYPE_CHECKING:
    from trex_eval.reward.front import ScorerFront
    from trex_eval.reward.runlog import RewardRunLog
    from trex_eval.reward.scorer import ScorerSettings
    from trex_eval.reward.service import ServiceLimits
    from trex_eval.reward.shutdown import Stopped


# The options only `serve` takes; those shared with other commands are in cli/options.py.
_HostOption = Annotated[str, typer.Option("--host", help="Address to listen on (loopback by default).")]
_PortOption = Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port, printed).")]
_PolicyOption = Annotated[
    str,
    typer.Option(
        "--policy",
        help="Reward policy: binary (1 for correct, else 0), staged (0.1 format, 0.2 executes, "
        "0.5 verified feasible model that uses the problem's data, 1 correct), sirl (SIRL's reward: "
        "answer + format tags + code that ran), or a YAML file of weighted terms (docs/rl-reward.md).",
        rich_help_panel=PANEL_GRADING,
    ),
]
_RuleOption = Annotated[
    Optional[str],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option(
        "--rule",
        help="Objective rule overriding the benchmarks' own; grades inline problems (default strict).",
        rich_help_panel=PANEL_GRADING,
        show_default=False,
    ),
]
_MaxPendingOption = Annotated[
    int,
    typer.Option("--max-pending", help="Rollouts admitted and not yet graded, at most; more get 429."),
]
DEFAULT_MAX_BATCH = 2048
_MaxBatchOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--max-batch",
        help="Rollouts one request may carry, at most (/v1/score requests, /get_reward queries); "
        "a larger one gets 413 naming this flag before any rollout is read. At most --max-pending "
        f"(default: {DEFAULT_MAX_BATCH}, or --max-pending where lower).",
        show_default=False,
    ),
]
_DeadlineOption = Annotated[
    float,
    typer.Option(
        "--deadline", help="Seconds a request may take at most; rollouts not graded by then get not_run."
    ),
]
_MaxConnectionsOption = Annotated[
    int,
    typer.Option(
        "--max-connections",
        help="HTTP connections open at once, at most: a newcomer closes the longest-idle one, "
        "or gets 503 when all have a request in progress.",
    ),
]
_IdleTimeoutOption = Annotated[
    float,
    typer.Option("--idle-timeout", help="Seconds a connection may wait for its next request; then closed."),
]
_RequestTimeoutOption = Annotated[
    float,
    typer.Option(
        "--request-timeout",
        help="Seconds a request may take to arrive from its first byte (else 408), and an answer "
        "to be read by the client.",
    ),
]
_BodyBudgetOption = Annotated[
    int,
    typer.Option(
        "--body-budget-mib",
        help="MiB of request bodies held at once, server-wide; a body that would pass it gets "
        "503 with Retry-After before it is read.",
    ),
]
_LogOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--log",
        help="Append every answered rollout's record to this JSONL file.",
        rich_help_panel=PANEL_OUTPUT,
        show_default=False,
    ),
]
_DiagnoseOption = Annotated[
    bool,
    typer.Option(
        "--diagnose/--no-diagnose",
        help="Say why each failing rollout failed, as run --diagnose does (in each record's diagnosis "
        "and --out's samples); never changes a reward, costs grading time.",
        rich_help_panel=PANEL_GRADING,
    ),
]
_ShowReferenceOption = Annotated[
    bool,
    typer.Option(
        "--show-reference",
        help="Let records, answers and logs quote the reference (its value in reasons, its rows and "
        "values in diagnoses): for evaluation logs. Without it a record says only whether the "
        "rollout matches the reference under its rule.",
        rich_help_panel=PANEL_OUTPUT,
    ),
]
_OutOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--out",
        "-o",
        help="Store every answered rollout as a sample of a run directory under this folder "
        "(epoch-0001, epoch-0002, ...: the k-th group of each problem's rollouts in epoch k), "
        "which leaderboard, compare and report read. An existing folder is continued.",
        rich_help_panel=PANEL_OUTPUT,
        show_default=False,
    ),
]
_PerProblemOption = Annotated[
    int,
    typer.Option(
        "--per-problem",
        help="Rollouts of one problem per epoch of --out: the trainer's group size "
        "(GRPO's num_generations; TRL's default is 8).",
        rich_help_panel=PANEL_OUTPUT,
    ),
]
_RayAddressOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--ray-address",
        help="Grade on a Ray cluster (auto, or its address): one scorer actor per node, each with "
        "--workers sandbox lanes. Needs the ray extra.",
        show_default=False,
    ),
]
_RayActorsOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--ray-actors", help="Scorer actors on Ray (default: one per alive node).", show_default=False
    ),
]
_AnyBenchmarkOption = Annotated[
    bool,
    typer.Option(
        "--any-benchmark",
        help="Also score keys naming benchmarks not given with -b (any shipped benchmark, loaded on "
        "first use). Without it such a key is refused (400) naming the key and the benchmarks served.",
        rich_help_panel=PANEL_GRADING,
    ),
]
_AllowConventionsOption = Annotated[
    bool,
    typer.Option(
        "--allow-conventions",
        help="Pay rewards under a --protocol with execution-convention options (preload, "
        "after-solve, zero-band, no-best-solution), which pay programs that crash, never solved "
        "or sit in a band around a zero label. Without it such a protocol is refused at start-up.",
        rich_help_panel=PANEL_GRADING,
    ),
]
_IsolationOption = Annotated[
    str,
    typer.Option(
        "--isolation",
        help="Sandbox isolation: auto (bwrap, else refuse to start) or a level to accept "
        "knowingly: bwrap, unshare (host file system readable), rlimits (host file system "
        "readable and network reachable). See docs/rl-reward.md.",
        rich_help_panel=PANEL_GRADING,
    ),
]


def serve(
    benchmarks: BenchmarksOption = [],  # noqa: B006 - typer needs a literal default
    host: _HostOption = "127.0.0.1",
    port: _PortOption = 8000,
    policy: _PolicyOption = "binary",
    protocol: ProtocolOption = DEFAULT_PROTOCOL,
    rule: _RuleOption = None,
    workers: WorkersOption = DEFAULT_WORKERS,
    max_pending: _MaxPendingOption = 4096,
    max_batch: _MaxBatchOption = None,
    deadline_s: _DeadlineOption = 600.0,
    max_connections: _MaxConnectionsOption = 512,
    idle_timeout_s: _IdleTimeoutOption = 60.0,
    request_timeout_s: _RequestTimeoutOption = 60.0,
    body_budget_mib: _BodyBudgetOption = 512,
    log: _LogOption = None,
    diagnose: _DiagnoseOption = False,
    out_dir: _OutOption = None,
    per_problem: _PerProblemOption = 8,
    ray_address: _RayAddressOption = None,
    ray_actors: _RayActorsOption = None,
    data_dir: DataDirOption = None,
    isolation: _IsolationOption = "auto",
    any_benchmark: _AnyBenchmarkOption = False,
    show_reference: _ShowReferenceOption = False,
    allow_conventions: _AllowConventionsOption = False,
) -> None:
    """Serve rewards over HTTP: POST /v1/score (trex-eval's records), POST /get_reward (OpenRLHF's
    remote reward model), GET /health, GET /metrics (Prometheus).

    Each rollout is graded as `trex-eval run` grades a sample (sandboxed, the objective re-derived
    by the harness) and paid by --policy. Problems are rows of the benchmarks named by -b (their
    files are hidden from the programs; a key naming another benchmark is refused unless
    --any-benchmark) or inline ({"value": OPTIMUM}); a key may come in any form `export-rl` writes,
    as an object or as JSON text. SIGTERM or Ctrl-C drains: nothing new is admitted, requests in the
    house are answered, connections are closed, then the server exits 0 (with nothing pending, at
    once). A second signal stops at once, leaving the pending rollouts unanswered (exit 130;
    SIGTERM: 143).
    """
    from trex_eval.benchmarks.suites import expand as expand_suites
    from trex_eval.reward.scorer import ScorerSettings

    if max_pending < 1 or deadline_s <= 0 or per_problem < 1:
        raise ConfigError("--max-pending and --per-problem must be at least 1, and --deadline positive")
    settings = ScorerSettings(
        policy=policy,
        protocol=protocol_name(protocol),
        rule=rule,
        benchmarks=expand_suites(split_list(benchmarks)),  # `-b sirl`, as export-rl reads it
        data_dir=data_dir,
        workers=workers_count(workers),
        diagnose=diagnose,
        isolation=isolation,
        any_benchmark=any_benchmark,
        show_reference=show_reference,
        allow_conventions=allow_conventions,
    )
    limits = _service_limits(
        max_pending=max_pending,
        max_batch=max_batch,
        deadline_s=deadline_s,
        max_connections=max_connections,
        idle_timeout_s=idle_timeout_s,
        request_timeout_s=request_timeout_s,
        body_budget_mib=body_budget_mib,
    )
    serving = _serve(
        settings,
        limits=limits,
        host=host,
        port=port,
        log=log,
        out_dir=out_dir,
        per_problem=per_problem,
        ray_address=ray_address,
        ray_actors=ray_actors,
    )
    _until_stopped(serving)


def _until_stopped(serving: Coroutine[None, None, Stopped]) -> None:
    """Run ``serving`` to its end: return after a clean stop (exit 0); after a drain cut short (a
    second signal, or the drain's time limit) say how many rollouts were left unanswered and exit
    as interrupted (130 after SIGINT, 143 after SIGTERM)."""
    import asyncio

    from trex_eval.cli.finish import EXIT_INTERRUPTED, interruption_told

    stopped = asyncio.run(serving)
    if stopped.clean:
        return
    line = f"stopped with {stopped.pending} rollouts unanswered"
    err.print(line, highlight=False)
    interruption_told(line)
    raise typer.Exit(EXIT_INTERRUPTED if stopped.signal is None else 128 + stopped.signal)


def _service_limits(
    *,
    max_pending: int,
    max_batch: int | None,
    deadline_s: float,
    max_connections: int,
    idle_timeout_s: float,
    request_timeout_s: float,
    body_budget_mib: int,
) -> ServiceLimits:
    """The service's limits from serve's flags (``body_budget_mib`` in MiB; ``max_batch`` None:
    :data:`DEFAULT_MAX_BATCH`, or ``max_pending`` where lower).

    Raises:
        ConfigError: a connection limit below 1, a timeout not positive, or a batch limit below 1
            or over ``max_pending`` (such a batch could never be admitted: 429 on every retry).
    """
    from trex_eval.reward.service import ServiceLimits

    if max_batch is None:
        max_batch = min(DEFAULT_MAX_BATCH, max_pending)
    if not 1 <= max_batch <= max_pending:
        raise ConfigError(
            f"--max-batch {max_batch} must be at least 1 and at most --max-pending ({max_pending}): "
            "a request larger than the pending limit could never be admitted",
            hint=f"lower --max-batch to {max_pending} or raise --max-pending",
        )
    if min(max_connections, body_budget_mib) < 1 or min(idle_timeout_s, request_timeout_s) <= 0:
        raise ConfigError(
            "--max-connections and --body-budget-mib must be at least 1, and --idle-timeout and "
            "--request-timeout positive"
        )
    return ServiceLimits(
        max_pending=max_pending,
        max_batch=max_batch,
        deadline_s=deadline_s,
        max_connections=max_connections,
        idle_timeout_s=idle_timeout_s,
        request_timeout_s=request_timeout_s,
        body_budget_bytes=body_budget_mib << 20,
    )


async def _serve(
    settings: ScorerSettings,
    *,
    limits: ServiceLimits,
    host: str,
    port: int,
    log: Path | None,
    out_dir: Path | None,
    per_problem: int,
    ray_address: str | None,
    ray_actors: int | None,
) -> Stopped:
    """Serve rewards on ``host:port`` (the port printed on stdout once listening) until SIGTERM or
    Ctrl-C has drained the requests in the house (or a second signal cut the drain short: see the
    :class:`~trex_eval.reward.shutdown.Stopped` returned); grading in this process, or on Ray when
    ``ray_address`` is given."""
    from trex_eval.reward.ray_pool import RayPoolSettings, RayRewardPool
    from trex_eval.reward.scorer import RewardScorer
    from trex_eval.reward.server import RewardServer
    from trex_eval.reward.service import RewardService

    scorer: RewardScorer | RayRewardPool = (
        RewardScorer(settings)
        if ray_address is None
        else RayRewardPool(settings, RayPoolSettings(address=ray_address, actors=ray_actors))
    )
    async with scorer, _run_log(out_dir, scorer, per_problem=per_problem) as runlog:
        service = RewardService(scorer, limits, log=log, runlog=runlog)
        server = RewardServer(service, host=host, port=port)
        await server.start()
        described = scorer.describe()
        out.print(
            f"serving rewards on http://{host}:{server.port} (policy {described['policy']}, "
            f"{len(settings.benchmarks)} benchmarks"
            + (" and any other shipped one" if settings.any_benchmark else "")
            + f", {settings.workers} sandbox lanes"
            + ("" if ray_address is None else f" on each Ray actor of {ray_address}")
            + f", sandbox isolation {_isolation_in_force(described)})",
            highlight=False,
            soft_wrap=True,
        )
        out.file.flush()  # a supervisor reading the port from a pipe must see it now
        stopped = await server.serve_until_stopped(
            on_signal=lambda line: err.print(line, highlight=False, soft_wrap=True)
        )
    if out_dir is not None:
        out_text = (
            f"rollouts stored under {out_dir} (read them with `trex-eval leaderboard {out_dir}/epoch-*`)"
        )
        err.print(out_text, highlight=False, soft_wrap=True)
    return stopped


@contextlib.asynccontextmanager
async def _run_log(
    root: Path | None, scorer: ScorerFront, *, per_problem: int
) -> AsyncIterator[RewardRunLog | None]:
    """The reward log under ``root`` (None without), checked against the scorer's benchmarks and
    closed (summaries written) when the server stops."""
    if root is None:
        yield None
        return
    import asyncio

    from trex_eval.reward.runlog import RewardRunLog
    from trex_eval.run.provenance import collect

    described = scorer.describe()
    runlog = RewardRunLog(
        root,
        per_problem=per_problem,
        policy=str(described["policy"]),
        policy_spec=scorer.policy.manifest(),
        protocol=scorer.settings.protocol,
        provenance=collect(scorer.catalogue.data_dir, sandbox=_sandbox_block(described), backend=described),
        command=tuple(sys.argv),
    )
    await asyncio.to_thread(runlog.open)
    try:
        runlog.check(scorer.catalogue.plans(), inline_rule=scorer.catalogue.inline_rule.spec)
        yield runlog
    finally:
        await asyncio.to_thread(runlog.close)


def _isolation_in_force(described: dict[str, object]) -> str:
    """The isolation level(s) rollouts run under: the scorer's, or each Ray actor's."""
    level = described.get("isolation")
    if isinstance(level, str):
        return level
    block = _sandbox_block(described)
    actors = block.get("actors")
    found = {
        str(actor["isolation"].get("level"))
        for actor in (actors if isinstance(actors, list) else [])
        if isinstance(actor, dict) and isinstance(actor.get("isolation"), dict)
    }
    return "/".join(sorted(found)) or "unknown"


def _sandbox_block(described: dict[str, object]) -> dict[str, object]:
    """The manifest's ``sandbox`` block, as a run's holds it (the pool's description, its
    ``isolation.level`` the level in force); on Ray, one such description per actor."""
    sandbox = described.get("sandbox")
    if isinstance(sandbox, dict):
        return dict(sandbox)
    ray = described.get("ray")
    placement = ray.get("placement", []) if isinstance(ray, dict) else []
    return {"actors": [actor.get("sandbox") for actor in placement if isinstance(actor, dict)]}
