"""`trex-eval serve`: the verified grader as an HTTP reward server for RL training."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
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


def serve(
    benchmarks: BenchmarksOption = [],  # noqa: B006 - typer needs a literal default
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free port, printed).")
    ] = 8000,
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help="Reward policy: binary (1 for correct, else 0) or staged (0.1 format, 0.2 executes, "
            "0.5 verified feasible, 1 correct).",
            rich_help_panel=PANEL_GRADING,
        ),
    ] = "binary",
    protocol: ProtocolOption = DEFAULT_PROTOCOL,
    rule: Annotated[
        Optional[str],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
        typer.Option(
            "--rule",
            help="Objective rule overriding the benchmarks' own; grades inline problems (default strict).",
            rich_help_panel=PANEL_GRADING,
            show_default=False,
        ),
    ] = None,
    workers: WorkersOption = DEFAULT_WORKERS,
    max_pending: Annotated[
        int,
        typer.Option("--max-pending", help="Rollouts admitted and not yet graded, at most; more get 429."),
    ] = 4096,
    deadline_s: Annotated[
        float,
        typer.Option(
            "--deadline", help="Seconds a request may take at most; rollouts not graded by then get not_run."
        ),
    ] = 600.0,
    log: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--log",
            help="Append every answered rollout's record to this JSONL file.",
            rich_help_panel=PANEL_OUTPUT,
            show_default=False,
        ),
    ] = None,
    diagnose: Annotated[
        bool,
        typer.Option(
            "--diagnose/--no-diagnose",
            help="Say why each failing rollout of a benchmark row failed (in each record's diagnosis "
            "and --out's samples); never changes a reward, costs grading time.",
            rich_help_panel=PANEL_GRADING,
        ),
    ] = False,
    out_dir: Annotated[
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
    ] = None,
    per_problem: Annotated[
        int,
        typer.Option(
            "--per-problem",
            help="Rollouts of one problem per epoch of --out: the trainer's group size "
            "(GRPO's num_generations; TRL's default is 8).",
            rich_help_panel=PANEL_OUTPUT,
        ),
    ] = 8,
    ray_address: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--ray-address",
            help="Grade on a Ray cluster (auto, or its address): one scorer actor per node, each with "
            "--workers sandbox lanes. Needs the ray extra.",
            show_default=False,
        ),
    ] = None,
    ray_actors: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--ray-actors", help="Scorer actors on Ray (default: one per alive node).", show_default=False
        ),
    ] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Serve rewards over HTTP: POST /v1/score (trex-eval's records), POST /get_reward (OpenRLHF's
    remote reward model), GET /health, GET /metrics (Prometheus).

    Each rollout is graded as `trex-eval run` grades a sample (sandboxed, the objective re-derived
    by the harness) and paid by --policy. Problems are benchmark rows named by -b (their files are
    hidden from the programs) or inline ({"value": OPTIMUM}). SIGTERM or Ctrl-C drains: nothing new
    is admitted, requests in the house are answered, then the server exits 0.
    """
    from trex_eval.reward.ray_pool import RayPoolSettings, RayRewardPool
    from trex_eval.reward.scorer import RewardScorer, ScorerSettings
    from trex_eval.reward.server import RewardServer
    from trex_eval.reward.service import RewardService, ServiceLimits

    if max_pending < 1 or deadline_s <= 0 or per_problem < 1:
        raise ConfigError("--max-pending and --per-problem must be at least 1, and --deadline positive")
    settings = ScorerSettings(
        policy=policy,
        protocol=protocol_name(protocol),
        rule=rule,
        benchmarks=split_list(benchmarks),
        data_dir=data_dir,
        workers=workers_count(workers),
        diagnose=diagnose,
    )
    limits = ServiceLimits(max_pending=max_pending, deadline_s=deadline_s)

    async def main() -> None:
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
                f"{len(settings.benchmarks)} benchmarks, {settings.workers} sandbox lanes"
                + ("" if ray_address is None else f" on each Ray actor of {ray_address}")
                + ")",
                highlight=False,
                soft_wrap=True,
            )
            out.file.flush()  # a supervisor reading the port from a pipe must see it now
            await server.serve_until_stopped(on_signal=lambda line: err.print(line, highlight=False))
        if out_dir is not None:
            out_text = (
                f"rollouts stored under {out_dir} (read them with `trex-eval leaderboard {out_dir}/epoch-*`)"
            )
            err.print(out_text, highlight=False, soft_wrap=True)

    asyncio.run(main())


@contextlib.asynccontextmanager
async def _run_log(
    root: Path | None, scorer: ScorerFront, *, per_problem: int
) -> AsyncIterator[RewardRunLog | None]:
    """The reward log under ``root`` (None without), checked against the scorer's benchmarks and
    closed (summaries written) when the server stops."""
    if root is None:
        yield None
        return
    from trex_eval.reward.runlog import RewardRunLog
    from trex_eval.run.provenance import collect

    described = scorer.describe()
    runlog = RewardRunLog(
        root,
        per_problem=per_problem,
        policy=str(described["policy"]),
        protocol=scorer.settings.protocol,
        provenance=collect(scorer.catalogue.data_dir, sandbox={}, backend=described),
        command=tuple(sys.argv),
    )
    await asyncio.to_thread(runlog.open)
    try:
        runlog.check(scorer.catalogue.plans(), inline_rule=scorer.catalogue.inline_rule.spec)
        yield runlog
    finally:
        await asyncio.to_thread(runlog.close)
