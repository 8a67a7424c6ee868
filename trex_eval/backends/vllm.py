"""The ``vllm`` backend: a ``vllm serve`` subprocess started, health-checked and stopped by the harness.

Why a managed server and not vLLM's in-process ``LLM`` engine: the harness never imports vLLM or
torch, so CUDA is never initialised in the process that forks sandbox workers (a CUDA context
does not survive ``fork``); vLLM may live in its own virtualenv with its own torch
(``TREX_VLLM_EXECUTABLE``, see :func:`trex_eval.config.vllm_executable`); an engine crash ends
the server, not the run; and requests go through the same client, retries and usage accounting
as every other OpenAI-compatible endpoint. vLLM batches concurrent requests continuously, so the
client's ``concurrency`` (default 64 here) is what fills the engine.

``BackendSpec.model`` is what ``vllm serve`` takes: a local model folder or a hub id. The server
is started on 127.0.0.1 with ``--served-model-name`` set to that same string, so completions
record it as given.

Options (``BackendSpec.options``; see :class:`VLLMOptions`), plus the HTTP client's options.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, Field

from trex_eval import config
from trex_eval.backends.base import Backend, BackendSpec
from trex_eval.backends.served import ServedBackend, split_options
from trex_eval.backends.server_process import LOOPBACK, ServerLaunch, ServerProcess, free_port
from trex_eval.errors import ConfigError

_CLIENT_CONCURRENCY = 64

# Flags the backend sets or must not be set: the client connects to 127.0.0.1:port without a key.
_OWNED_FLAGS = frozenset({"--host", "--port", "--served-model-name", "--api-key"})

# Option name -> `vllm serve` flag, for the options passed through unchanged.
_SERVE_FLAGS: Mapping[str, str] = {
    "tensor_parallel_size": "--tensor-parallel-size",
    "data_parallel_size": "--data-parallel-size",
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

    Raises:
        ConfigError: ``extra_args`` is not valid shell quoting, or sets the host, port, served
            model name (which the backend owns) or an API key (the client sends none).
    """
    argv = [executable, "serve", model, "--host", LOOPBACK, "--port", str(port), "--served-model-name", model]
    for key, flag in _SERVE_FLAGS.items():
        value = getattr(options, key)
        if value is not None:
            argv += [flag, str(value)]
    try:
        extra = shlex.split(options.extra_args or "")
    except ValueError as error:
        raise ConfigError(f"option extra_args is not valid shell quoting: {error}") from None
    owned = sorted({arg.split("=", 1)[0] for arg in extra} & _OWNED_FLAGS)
    if owned:
        raise ConfigError(
            f"option extra_args may not set {', '.join(owned)}: the vllm backend owns them",
            hint="use option port to choose the port",
        )
    return (*argv, *extra)


class VLLMBackend(ServedBackend):
    """A model served by a ``vllm serve`` child process on loopback."""

    def __init__(
        self, spec: BackendSpec, *, executable: str, options: VLLMOptions, client_spec: BackendSpec
    ) -> None:
        super().__init__(spec, client_spec=client_spec)
        self.executable = executable
        self.options = options
        self._argv: tuple[str, ...] = ()
        self._version: str | None = None

    def _launch(self) -> ServerLaunch:
        port = self.options.port or free_port()
        self._argv = serve_argv(self.executable, self.spec.model, self.options, port=port)
        return ServerLaunch(
            label="vLLM server",
            argv=self._argv,
            port=port,
            startup_timeout_s=self.options.startup_timeout_s,
            stop_grace_s=self.options.stop_grace_s,
            log_file=Path(self.options.log_file) if self.options.log_file else None,
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

    def _provenance(self) -> dict[str, object]:
        local = Path(self.spec.model).expanduser()
        return {
            "server": f"vllm {self._version}" if self._version else "vllm (version unknown)",
            "executable": self.executable,
            "model_path": str(local.resolve()) if local.exists() else None,
            "argv": list(self._argv),
        }


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
    return VLLMBackend(spec, executable=executable, options=options, client_spec=client_spec)
