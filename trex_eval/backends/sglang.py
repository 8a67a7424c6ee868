"""The ``sglang`` backend: ``python -m sglang.launch_server`` started, health-checked and stopped
by the harness (``--model sglang/<hub id or path>``).

The same seam as :mod:`~trex_eval.backends.vllm` (a loopback child process behind the shared
OpenAI-compatible client, :class:`~trex_eval.backends.served.ServedBackend`), for the same
reasons. The server runs under the interpreter named by ``TREX_SGLANG_PYTHON`` (a virtualenv
with ``sglang[all]``), default ``python3`` on PATH. A ModelScope model (``hub: modelscope``)
sets ``SGLANG_USE_MODELSCOPE=true`` for the server. A preset marked ``large`` gets ``--tp-size``
= the visible GPUs (:mod:`~.gpus`) divided by ``data_parallel_size``.

Not covered by a test that starts SGLang: no CPU build of SGLang installs here, so the command
line is what the tests pin (``tests/backends/test_scale_out.py``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from trex_eval import config
from trex_eval.backends import gpus as gpu_probe
from trex_eval.backends import hub as hubs
from trex_eval.backends.base import Backend, BackendKind, BackendSpec
from trex_eval.backends.served import ServedBackend, extra_server_args, split_options
from trex_eval.backends.server_process import LOOPBACK, ServerLaunch, free_port
from trex_eval.errors import ConfigError

_CLIENT_CONCURRENCY = 64
_OWNED_FLAGS = frozenset({"--host", "--port", "--served-model-name", "--api-key", "--model-path"})
_FLAGS: Mapping[str, str] = {
    "tensor_parallel_size": "--tp-size",
    "data_parallel_size": "--dp-size",
    "mem_fraction_static": "--mem-fraction-static",
    "context_length": "--context-length",
    "dtype": "--dtype",
    "reasoning_parser": "--reasoning-parser",
    "chat_template": "--chat-template",
    "revision": "--revision",
}


class SGLangOptions(BaseModel):
    """Options of the ``sglang`` backend (``None``: SGLang's default). ``extra_args`` are further
    ``launch_server`` arguments; ``large``, ``hub``, ``revision``, ``port``, the timeouts and
    ``log_file`` mean what they mean for :class:`~trex_eval.backends.vllm.VLLMOptions`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tensor_parallel_size: int | None = Field(default=None, ge=1)
    data_parallel_size: int | None = Field(default=None, ge=1)
    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)
    context_length: int | None = Field(default=None, ge=1)
    dtype: str | None = None
    reasoning_parser: str | None = None
    chat_template: str | None = None
    revision: str | None = None
    hub: hubs.Hub | None = None
    large: bool = False
    extra_args: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    startup_timeout_s: float = Field(default=1200.0, gt=0)
    stop_grace_s: float = Field(default=30.0, ge=0)
    log_file: str | None = None


def sglang_python() -> str:
    """The interpreter that has ``sglang`` (``TREX_SGLANG_PYTHON``, default ``python3``)."""
    return config.getenv("TREX_SGLANG_PYTHON") or "python3"


def launch_argv(
    python: str, model: str, options: SGLangOptions, *, port: int, gpus: gpu_probe.VisibleGPUs | None = None
) -> tuple[str, ...]:
    """The ``launch_server`` command line; ``tensor_parallel_size`` defaults as the module says.

    Raises:
        ConfigError: bad ``extra_args`` quoting, or ``extra_args`` setting a flag the backend owns.
    """
    tp = options.tensor_parallel_size
    if tp is None and options.large:
        seen = gpus if gpus is not None else gpu_probe.visible_gpus()
        tp = seen.count // (options.data_parallel_size or 1) or None
    chosen = options.model_copy(update={"tensor_parallel_size": tp})
    argv = [
        python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--host",
        LOOPBACK,
        "--port",
        str(port),
    ]
    argv += ["--served-model-name", model]
    for key, flag in _FLAGS.items():
        value = getattr(chosen, key)
        if value is not None:
            argv += [flag, str(value)]
    extra = extra_server_args(options.extra_args, owned=_OWNED_FLAGS, backend="sglang")
    return (*argv, *extra)


def _environment(options: SGLangOptions) -> dict[str, str]:
    return {"SGLANG_USE_MODELSCOPE": "true"} if options.hub == "modelscope" else {}


class SGLangBackend(ServedBackend):
    """A model served by an SGLang child process on loopback."""

    def __init__(
        self, spec: BackendSpec, *, python: str, options: SGLangOptions, client_spec: BackendSpec
    ) -> None:
        super().__init__(spec, client_spec=client_spec)
        self.python = python
        self.options = options
        self._argv: tuple[str, ...] = ()

    def _launch(self) -> ServerLaunch:
        port = self.options.port or free_port()
        self._argv = launch_argv(self.python, self.spec.model, self.options, port=port)
        extra = _environment(self.options)
        return ServerLaunch(
            label="SGLang server",
            argv=self._argv,
            port=port,
            startup_timeout_s=self.options.startup_timeout_s,
            stop_grace_s=self.options.stop_grace_s,
            log_file=Path(self.options.log_file) if self.options.log_file else None,
            env=config.environment(extra),
        )

    def _served_model(self) -> str:
        return self.spec.model

    def _provenance(self) -> dict[str, object]:
        source = hubs.model_source(self.spec.model, hub=self.options.hub, revision=self.options.revision)
        revision = hubs.revision_facts(source)
        return {
            "server": "sglang",
            "python": self.python,
            "argv": list(self._argv),
            "download": source.label(),
            "revision_requested": self.options.revision,
            "revision_resolved": revision.commit,
            "revision_cache": revision.facts(),
        }


def dry_run(spec: BackendSpec) -> dict[str, object]:
    """The server command line, environment and download source, starting nothing."""
    options, _ = split_options(spec, SGLangOptions, client_defaults={"concurrency": _CLIENT_CONCURRENCY})
    source = hubs.model_source(spec.model, hub=options.hub, revision=options.revision)
    seen = gpu_probe.visible_gpus()
    return {
        "backend": "sglang",
        "model": spec.model,
        "argv": list(
            launch_argv(sglang_python(), spec.model, options, port=options.port or 30000, gpus=seen)
        ),
        "environment": _environment(options),
        "download": source.label(),
        "gpus": seen.facts(),
    }


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``sglang`` backend.

    Raises:
        ConfigError: no model, no interpreter found, unknown or invalid option, bad ``extra_args``.
    """
    if not spec.model:
        raise ConfigError(
            "the sglang backend needs a model: a local folder or a hub id",
            where=f"model preset '{spec.name}'",
        )
    wanted = sglang_python()
    python = shutil.which(wanted)
    if python is None:
        raise ConfigError(
            f"python interpreter '{wanted}' for SGLang not found",
            where=f"model preset '{spec.name}'",
            hint="point TREX_SGLANG_PYTHON at the python of a virtualenv with sglang[all]",
        )
    options, client_spec = split_options(
        spec, SGLangOptions, client_defaults={"concurrency": _CLIENT_CONCURRENCY}
    )
    launch_argv(python, spec.model, options, port=1, gpus=gpu_probe.VisibleGPUs(0, (), "not probed"))
    return SGLangBackend(spec, python=python, options=options, client_spec=client_spec)


BACKEND = BackendKind(create=create, dry_run=dry_run)
