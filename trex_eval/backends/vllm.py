"""The ``vllm`` backend: a ``vllm serve`` subprocess started, health-checked and stopped by the harness.

Why a managed server and not vLLM's in-process ``LLM`` engine: the harness never imports vLLM or
torch, so CUDA is never initialised in the process that forks sandbox workers (a CUDA context
does not survive ``fork``); vLLM may live in its own virtualenv with its own torch
(``TREX_VLLM_EXECUTABLE``, see :func:`trex_eval.config.vllm_executable`); an engine crash ends
the server, not the run; and requests go through the same client, retries and usage accounting
as every other OpenAI-compatible endpoint. vLLM batches concurrent requests continuously, so the
client's ``concurrency`` (default 64 here) is what fills the engine.

``BackendSpec.model`` is what ``vllm serve`` takes: a local model folder or a hub id (Hugging
Face, or ModelScope with ``hub: modelscope``; ``revision`` pins one: :mod:`~.hub`). The server
is started on 127.0.0.1 with ``--served-model-name`` set to that same string, so completions
record it as given.

Parallelism: a preset marked ``large`` gets ``--tensor-parallel-size`` = the GPUs visible to the
server (:mod:`~.gpus`) divided by its data- and (single-node) pipeline-parallel sizes, unless it
sets ``tensor_parallel_size`` itself; other presets keep vLLM's defaults. Before the server
starts, a layout that needs more GPUs than are visible, or GPUs that cannot hold the weights, is
a :class:`~trex_eval.errors.ConfigError` (:func:`plan_serve`; ``trex-eval run --dry-run``
prints the plan without starting anything).

Multi-node (vLLM's Ray recipe, :func:`ray_recipe`): start Ray on every node (``ray start
--head`` on one, ``ray start --address=<head>:6379`` on the others), then run trex-eval on the
head with ``nodes: N`` (``--pipeline-parallel-size N --distributed-executor-backend ray``, the
tensor-parallel size = the GPUs of one node) and ``ray_address: <head>:6379`` to attach the
server to that cluster (``RAY_ADDRESS`` in its environment). Without ``ray_address`` a
``ray`` executor starts a single-node Ray instance of its own.

Options (``BackendSpec.options``; see :class:`VLLMOptions`), plus the HTTP client's options.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from trex_eval import config
from trex_eval.backends import gpus as gpu_probe
from trex_eval.backends import hub as hubs
from trex_eval.backends.base import Backend, BackendKind, BackendSpec
from trex_eval.backends.served import ServedBackend, extra_server_args, split_options
from trex_eval.backends.server_process import LOOPBACK, ServerLaunch, ServerProcess, free_port
from trex_eval.errors import ConfigError

_CLIENT_CONCURRENCY = 64

# Flags the backend sets or must not be set: the client connects to 127.0.0.1:port without a key.
_OWNED_FLAGS = frozenset({"--host", "--port", "--served-model-name", "--api-key"})

# Option name -> `vllm serve` flag, for the options passed through unchanged.
_SERVE_FLAGS: Mapping[str, str] = {
    "tensor_parallel_size": "--tensor-parallel-size",
    "data_parallel_size": "--data-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size",
    "distributed_executor_backend": "--distributed-executor-backend",
    "revision": "--revision",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "dtype": "--dtype",
    "reasoning_parser": "--reasoning-parser",
    "chat_template": "--chat-template",
}


class VLLMOptions(BaseModel):
    """Options of the ``vllm`` backend. ``None`` leaves vLLM's own default in force.

    Attributes:
        tensor_parallel_size: GPUs one model replica is split over (``--tensor-parallel-size``).
        data_parallel_size: model replicas, each with ``tensor_parallel_size`` GPUs
            (``--data-parallel-size``); vLLM balances requests across them.
        pipeline_parallel_size: pipeline stages of one replica (``--pipeline-parallel-size``);
            across nodes with ``nodes``.
        distributed_executor_backend: ``ray`` or ``mp`` (``--distributed-executor-backend``);
            ``ray`` is required across nodes.
        nodes: nodes one replica spans (default 1). More than one: the Ray recipe of the module
            docstring (pipeline stages = nodes, executor ``ray``, tensor parallel = GPUs per node).
        ray_address: ``host:port`` of a running Ray cluster for the server to attach to
            (``RAY_ADDRESS``).
        large: the model needs several GPUs: the tensor-parallel size defaults to the visible
            GPUs (see the module docstring).
        weights_gib: size of the weights in GiB when no local file tells (hub models not yet
            downloaded), for the fits-in-memory check; an estimate (parameters x bytes each).
        hub: where a hub id downloads from: ``huggingface`` (default) or ``modelscope``.
        revision: branch, tag or commit of a hub model to load (``--revision``).
        gpu_memory_utilization: fraction of each GPU's memory vLLM may take, 0-1. On vLLM's CPU
            backend it is the fraction of the NUMA node's RAM.
        max_model_len: context length in tokens (prompt plus answer).
        dtype: weight and activation dtype (``auto``, ``bfloat16``, ``float16``, ``float32``).
        reasoning_parser: vLLM reasoning parser (``deepseek_r1``, ``qwen3``, ...); the reasoning
            then arrives in ``Completion.reasoning``.
        chat_template: a chat template file or inline template for models without one.
        extra_args: further ``vllm serve`` arguments as one shell-quoted string, e.g.
            ``"--enforce-eager --generation-config vllm"``.
        port: loopback port to serve on; default: a free one.
        startup_timeout_s: seconds allowed until ``/health`` answers (default 1200: large
            models load and compile for minutes).
        stop_grace_s: seconds between SIGTERM and SIGKILL at close (default 30).
        log_file: where the server's output goes; default: a new file in the temp dir.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tensor_parallel_size: int | None = Field(default=None, ge=1)
    data_parallel_size: int | None = Field(default=None, ge=1)
    pipeline_parallel_size: int | None = Field(default=None, ge=1)
    distributed_executor_backend: Literal["ray", "mp"] | None = None
    nodes: int = Field(default=1, ge=1)
    ray_address: str | None = None
    large: bool = False
    weights_gib: float | None = Field(default=None, gt=0)
    hub: hubs.Hub | None = None
    revision: str | None = None
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=1)
    dtype: str | None = None
    reasoning_parser: str | None = None
    chat_template: str | None = None
    extra_args: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    startup_timeout_s: float = Field(default=1200.0, gt=0)
    stop_grace_s: float = Field(default=30.0, ge=0)
    log_file: str | None = None


def serve_argv(executable: str, model: str, options: VLLMOptions, *, port: int) -> tuple[str, ...]:
    """The ``vllm serve`` command line for ``model`` with ``options`` on ``127.0.0.1:port``.

    Only the options as given: the defaults that depend on the hardware are chosen by
    :func:`plan_serve`, which calls this with them filled in.

    Raises:
        ConfigError: ``extra_args`` is not valid shell quoting, or sets the host, port, served
            model name (which the backend owns) or an API key (the client sends none).
    """
    argv = [executable, "serve", model, "--host", LOOPBACK, "--port", str(port), "--served-model-name", model]
    for key, flag in _SERVE_FLAGS.items():
        value = getattr(options, key)
        if value is not None:
            argv += [flag, str(value)]
    extra = extra_server_args(
        options.extra_args, owned=_OWNED_FLAGS, backend="vllm", hint="use option port to choose the port"
    )
    return (*argv, *extra)


@dataclass(frozen=True)
class ServePlan:
    """What the backend will start, decided before anything starts (``--dry-run`` prints it).

    Attributes:
        argv: the ``vllm serve`` command line.
        environment: variables added to the server's environment (``VLLM_USE_MODELSCOPE``,
            ``RAY_ADDRESS``).
        source: where the weights come from.
        gpus: the GPUs the server will see.
        parallelism: tensor, data and pipeline sizes, executor and nodes, and why.
        weights_bytes: size of the weights when known, and ``weights_from``: how it was found.
        problem: why the layout cannot work (:meth:`check` raises it), or ``None``.
        ray_recipe: the commands that start the Ray cluster a multi-node server attaches to.
    """

    argv: tuple[str, ...]
    environment: Mapping[str, str]
    source: hubs.ModelSource
    gpus: gpu_probe.VisibleGPUs
    parallelism: Mapping[str, object]
    weights_bytes: int | None
    weights_from: str
    problem: str | None = None
    ray_recipe: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def check(self) -> None:
        """Raise the plan's problem as a ConfigError (before the server starts)."""
        if self.problem is not None:
            raise ConfigError(
                f"the vllm server cannot start as planned: {self.problem}",
                where=f"{self.gpus.count} visible GPU(s), {self.gpus.source}",
                hint="set CUDA_VISIBLE_DEVICES, tensor_parallel_size / data_parallel_size / "
                "pipeline_parallel_size, or nodes (`trex-eval run --dry-run` shows the plan)",
            )

    def facts(self) -> dict[str, object]:
        """JSON-safe form for the manifest and ``--dry-run``."""
        return {
            "argv": list(self.argv),
            "environment": dict(self.environment),
            "download": self.source.label(),
            "gpus": self.gpus.facts(),
            "parallelism": dict(self.parallelism),
            "weights_gib": round(self.weights_bytes / gpu_probe.GIB, 2) if self.weights_bytes else None,
            "weights_from": self.weights_from,
            "problem": self.problem,
            "ray_recipe": {k: list(v) for k, v in self.ray_recipe.items()},
        }


def plan_serve(
    executable: str, model: str, options: VLLMOptions, *, port: int, gpus: gpu_probe.VisibleGPUs | None = None
) -> ServePlan:
    """Decide the server's command line, environment and parallelism (module docstring).

    ``gpus`` defaults to :func:`~.gpus.visible_gpus` (tests pass their own). Never raises for a
    layout that cannot work: it is the plan's ``problem`` (so that ``--dry-run`` can show it).

    Raises:
        ConfigError: invalid ``extra_args``; ``nodes`` > 1 with the ``mp`` executor.
    """
    gpus = gpus if gpus is not None else gpu_probe.visible_gpus()
    if options.nodes > 1 and options.distributed_executor_backend == "mp":
        raise ConfigError("nodes > 1 needs distributed_executor_backend ray (mp runs on one node)")
    multi_node = options.nodes > 1
    dp = options.data_parallel_size
    pp = options.pipeline_parallel_size or (options.nodes if multi_node else None)
    executor = options.distributed_executor_backend or ("ray" if multi_node else None)
    tp, why, problem = _tensor_parallel(options, gpus, dp=dp, pp=pp, multi_node=multi_node)
    per_node = (tp or 1) * (dp or 1) * (1 if multi_node else (pp or 1))
    if problem is None and gpus.count and per_node > gpus.count:
        problem = f"the layout needs {per_node} GPUs on this node but {gpus.count} are visible"
    source = hubs.model_source(model, hub=options.hub, revision=options.revision)
    if model.startswith("<") and model.endswith(">"):
        problem = f"the preset names no checkpoint yet ({model}): pass --opt model=/path/to/checkpoint"
    elif source.kind == "local" and not Path(source.model).is_dir():
        problem = f"no model folder at {source.model}"
    elif problem is None and options.large and gpus.count == 0:
        problem = "the preset is a large model for GPUs, and no GPU is visible here"
    weights, weights_from = gpu_probe.weight_bytes(
        hubs.cached_snapshot(source), weights_gib=options.weights_gib
    )
    if problem is None and weights is not None:
        stages = options.nodes if multi_node else 1
        problem = gpu_probe.fit_problem(
            weights=weights // stages,
            gpus=gpus,
            gpus_per_replica=(tp or 1) * (1 if multi_node else (pp or 1)),
            utilisation=options.gpu_memory_utilization,
        )
    chosen = options.model_copy(
        update={
            "tensor_parallel_size": tp,
            "pipeline_parallel_size": pp,
            "distributed_executor_backend": executor,
        }
    )
    environment = dict(source.environment)
    if options.ray_address:
        environment["RAY_ADDRESS"] = options.ray_address
    recipe: dict[str, tuple[str, ...]] = {}
    if multi_node:
        recipe = ray_recipe(
            nodes=options.nodes, gpus_per_node=tp or gpus.count or 1, address=options.ray_address
        )
    return ServePlan(
        argv=serve_argv(executable, model, chosen, port=port),
        environment=environment,
        source=source,
        gpus=gpus,
        parallelism={
            "tensor_parallel_size": tp,
            "data_parallel_size": dp,
            "pipeline_parallel_size": pp,
            "distributed_executor_backend": executor,
            "nodes": options.nodes,
            "tensor_parallel_from": why,
        },
        weights_bytes=weights,
        weights_from=weights_from,
        problem=problem,
        ray_recipe=recipe,
    )


def _tensor_parallel(
    options: VLLMOptions, gpus: gpu_probe.VisibleGPUs, *, dp: int | None, pp: int | None, multi_node: bool
) -> tuple[int | None, str, str | None]:
    """The tensor-parallel size (``None``: vLLM's default), why it is that, and the problem with
    the layout (``None``: none). Set in ``options`` it is kept; a large preset takes the visible
    GPUs, divided among the data-parallel replicas and this node's pipeline stages."""
    if options.tensor_parallel_size is not None:
        return options.tensor_parallel_size, "tensor_parallel_size set in options", None
    if not options.large:
        return None, "vLLM's default (the preset is not marked large)", None
    if gpus.count == 0:
        return None, "vLLM's default: no GPU visible", None
    # Pipeline stages share this node's GPUs unless they are spread over nodes.
    split = (dp or 1) * (1 if multi_node else (pp or 1))
    tp = gpus.count // split
    why = f"{gpus.count} visible GPU(s) ({gpus.source})" + (f" / {split}" if split > 1 else "")
    if tp < 1:
        return None, why, f"data x pipeline parallel = {split} needs at least {split} GPUs"
    return tp, why, None


RAY_PORT = 6379


def ray_recipe(*, nodes: int, gpus_per_node: int, address: str | None = None) -> dict[str, tuple[str, ...]]:
    """The commands that start the Ray cluster of a ``nodes``-node server (vLLM's recipe).

    ``head`` runs on the node that will run trex-eval (and the server), ``worker`` on each of the
    other ``nodes - 1``; ``address`` is the head's ``host:port`` (default ``<head-ip>:6379``).
    """
    where = address or f"<head-ip>:{RAY_PORT}"
    port = where.rpartition(":")[2] or str(RAY_PORT)
    return {
        "head": ("ray", "start", "--head", f"--port={port}", f"--num-gpus={gpus_per_node}"),
        "worker": ("ray", "start", f"--address={where}", f"--num-gpus={gpus_per_node}"),
        "check": ("ray", "status"),
    }


class VLLMBackend(ServedBackend):
    """A model served by a ``vllm serve`` child process on loopback."""

    def __init__(
        self, spec: BackendSpec, *, executable: str, options: VLLMOptions, client_spec: BackendSpec
    ) -> None:
        super().__init__(spec, client_spec=client_spec)
        self.executable = executable
        self.options = options
        self._plan: ServePlan | None = None
        self._version: str | None = None
        self._revision = hubs.RevisionFacts()

    def plan(self, *, port: int) -> ServePlan:
        """The server this backend would start on ``port`` now."""
        return plan_serve(self.executable, self.spec.model, self.options, port=port)

    def _launch(self) -> ServerLaunch:
        port = self.options.port or free_port()
        plan = self.plan(port=port)
        self._plan = plan
        plan.check()
        return ServerLaunch(
            label="vLLM server",
            argv=plan.argv,
            port=port,
            startup_timeout_s=self.options.startup_timeout_s,
            stop_grace_s=self.options.stop_grace_s,
            log_file=Path(self.options.log_file) if self.options.log_file else None,
            env=config.environment(dict(plan.environment)),
        )

    def _served_model(self) -> str:
        return self.spec.model

    async def _on_ready(self, server: ServerProcess) -> None:
        # The server's own word on its version: the executable may belong to another virtualenv.
        try:
            async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
                response = await client.get(f"{server.base_url}/version")
            version = response.json().get("version") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            version = None
        self._version = version if isinstance(version, str) else None
        if self._plan is not None:
            # Read once the weights are loaded: the cache's ref then names what was downloaded.
            self._revision = hubs.revision_facts(self._plan.source)

    def _provenance(self) -> dict[str, object]:
        local = Path(self.spec.model).expanduser()
        plan = self._plan
        return {
            "server": f"vllm {self._version}" if self._version else "vllm (version unknown)",
            "executable": self.executable,
            "model_path": str(local.resolve()) if local.exists() else None,
            "argv": list(plan.argv) if plan is not None else [],
            "download": plan.source.label() if plan is not None else None,
            "revision_requested": self.options.revision,
            "revision_resolved": self._revision.commit,
            "revision_cache": self._revision.facts(),
            "parallelism": dict(plan.parallelism) if plan is not None else None,
            "gpus": plan.gpus.facts() if plan is not None else None,
            "server_environment": dict(plan.environment) if plan is not None else {},
        }


def dry_run(spec: BackendSpec) -> dict[str, object]:
    """What ``create(spec).start()`` would start, without starting it or needing vLLM installed
    (the executable is shown as configured when it is not found)."""
    options, _ = split_options(spec, VLLMOptions, client_defaults={"concurrency": _CLIENT_CONCURRENCY})
    wanted = config.vllm_executable()
    executable = shutil.which(wanted) or wanted
    plan = plan_serve(executable, spec.model, options, port=options.port or 8000)
    facts: dict[str, object] = {"backend": "vllm", "model": spec.model, **plan.facts()}
    if not shutil.which(wanted):
        facts["note"] = f"vllm executable '{wanted}' not found here (TREX_VLLM_EXECUTABLE)"
    if options.port is None:
        facts["port"] = "a free loopback port at start (8000 shown)"
    return facts


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``vllm`` backend (registry name ``vllm``).

    Raises:
        ConfigError: no model given, no ``vllm`` executable found (install the ``vllm`` extra or
            set ``TREX_VLLM_EXECUTABLE``), unknown or invalid option, bad ``extra_args``.
    """
    if not spec.model:
        raise ConfigError(
            "the vllm backend needs a model: a local model folder or a hub id",
            where=f"model preset '{spec.name}'",
        )
    wanted = config.vllm_executable()
    executable = shutil.which(wanted)
    if executable is None:
        raise ConfigError(
            f"vllm executable '{wanted}' not found",
            where=f"model preset '{spec.name}'",
            hint="pip install 'trex-eval[vllm]', or point TREX_VLLM_EXECUTABLE at the `vllm` of "
            "another virtualenv (scripts/setup_vllm_cpu.sh builds one for CPUs)",
        )
    options, client_spec = split_options(
        spec, VLLMOptions, client_defaults={"concurrency": _CLIENT_CONCURRENCY}
    )
    serve_argv(executable, spec.model, options, port=1)  # fail on bad extra_args before start()
    if options.nodes > 1 and options.distributed_executor_backend == "mp":
        raise ConfigError(
            "nodes > 1 needs distributed_executor_backend ray (mp runs on one node)",
            where=f"model preset '{spec.name}'",
        )
    return VLLMBackend(spec, executable=executable, options=options, client_spec=client_spec)


BACKEND = BackendKind(create=create, dry_run=dry_run)
