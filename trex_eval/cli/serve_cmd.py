"""`trex-eval serve`: the verified grader as an HTTP reward server for RL training."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

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

    if max_pending < 1 or deadline_s <= 0:
        raise ConfigError("--max-pending must be at least 1 and --deadline positive")
    settings = ScorerSettings(
        policy=policy,
        protocol=protocol_name(protocol),
        rule=rule,
        benchmarks=split_list(benchmarks),
        data_dir=data_dir,
        workers=workers_count(workers),
    )
    limits = ServiceLimits(max_pending=max_pending, deadline_s=deadline_s)

    async def main() -> None:
        scorer: RewardScorer | RayRewardPool = (
            RewardScorer(settings)
            if ray_address is None
            else RayRewardPool(settings, RayPoolSettings(address=ray_address, actors=ray_actors))
        )
        async with scorer:
            service = RewardService(scorer, limits, log=log)
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

    asyncio.run(main())
