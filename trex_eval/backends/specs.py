"""Ad-hoc model specs: ``--model vllm/<id or path>`` and friends, beside the named presets.

A spec names a backend and a model in one word, so that evaluating a checkpoint or an API model
needs no preset file (the convention of inspect_ai's ``--model vllm/<id>``):

``vllm/<hub id or local path>``
    A managed ``vllm serve`` of that model (``vllm/Qwen/Qwen2.5-7B-Instruct``,
    ``vllm//ckpt/step-900``, ``vllm/~/ckpt``).
``sglang/<hub id or local path>``
    A managed SGLang server of that model.
``openai/<model>``
    OpenAI's API (``OPENAI_BASE_URL`` when set, else ``https://api.openai.com/v1``), the key from
    ``OPENAI_API_KEY``.
``openai-compatible/<model>``
    Any OpenAI-compatible endpoint: the URL from ``--base-url`` (or ``--opt base_url=``, else
    ``OPENAI_BASE_URL``), the key from ``OPENAI_API_KEY`` when set. A loopback endpoint needs no
    key: with the variable unset, no key is sent. ``openai-compatible`` alone takes the model
    from ``MODEL_NAME``. ``base_url`` may list several endpoints (comma-separated): requests are
    balanced over them.
``local/<key>``
    An embedded CPU model (``local/smollm2-135m-instruct-q4``).

These are the variables of the reference harness (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``MODEL_NAME``), read once here and recorded in the run's model spec (the key never is: only
the name of its variable).

A spec takes the T-Rex sampling defaults and every ``--opt`` override a preset takes. A preset in
a models file may ``extend`` a spec (``extends: vllm/Qwen/Qwen2.5-7B-Instruct``): the spec gives
backend, model and default options, the preset's own options and sampling are laid over them.
"""

from __future__ import annotations

from pathlib import Path

from trex_eval import config
from trex_eval.errors import ConfigError
from trex_eval.records import BackendSpec

OPENAI_API_URL = "https://api.openai.com/v1"
OPENAI_KEY_VARIABLE = "OPENAI_API_KEY"
OPENAI_BASE_URL_VARIABLE = "OPENAI_BASE_URL"
MODEL_NAME_VARIABLE = "MODEL_NAME"

SCHEMES: dict[str, str] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "openai": "openai",
    "openai-compatible": "openai",
    "local": "local",
}
"""Spec prefix -> backend registry name."""

GRAMMAR = """\
--model accepts a preset name (listed above) or an ad-hoc spec:
  vllm/<hub id or local path>   managed `vllm serve` (vllm/Qwen/Qwen2.5-7B-Instruct, vllm//ckpt/step-900)
  sglang/<hub id or local path> managed SGLang server (python -m sglang.launch_server)
  openai/<model>                OpenAI API (OPENAI_BASE_URL or https://api.openai.com/v1; key OPENAI_API_KEY)
  openai-compatible/<model>     any endpoint: --base-url URL[,URL...] (else OPENAI_BASE_URL); the key
                                from OPENAI_API_KEY, none needed on loopback; no <model>: MODEL_NAME
  local/<key>                   embedded CPU model (local-* presets' keys)
--base-url URL alone means openai-compatible/$MODEL_NAME. Options: --opt KEY=VALUE as for presets
(vllm: tensor_parallel_size, data_parallel_size, pipeline_parallel_size, distributed_executor_backend,
hub=modelscope, revision, ...). A preset may `extends: <spec>` in a models file."""
"""What ``trex-eval models`` prints after the presets."""


def is_spec(name: str) -> bool:
    """Whether ``name`` is written in the spec grammar (``scheme/...`` or ``openai-compatible``)."""
    scheme, sep, _ = name.partition("/")
    return (bool(sep) and scheme in SCHEMES) or name == "openai-compatible"


def parse_spec(name: str, *, base_url: str | None = None) -> BackendSpec:
    """The backend spec of an ad-hoc model spec (see the module docstring).

    ``base_url`` is the command line's ``--base-url`` (it wins over ``OPENAI_BASE_URL``).

    Raises:
        ConfigError: not a spec, an empty model, ``openai-compatible`` without a URL, or without
            a model and no ``MODEL_NAME``.
    """
    scheme, _, model = name.partition("/")
    if scheme not in SCHEMES:
        raise ConfigError(f"'{name}' is not a model spec", hint=GRAMMAR)
    backend = SCHEMES[scheme]
    options: dict[str, str | int | float | bool | None] = {}
    if scheme == "openai-compatible":
        model = model or (config.getenv(MODEL_NAME_VARIABLE) or "")
        url = base_url or config.getenv(OPENAI_BASE_URL_VARIABLE)
        if not url:
            raise ConfigError(
                f"model spec '{name}' needs an endpoint",
                hint=f"pass --base-url http://host:port/v1 (or set {OPENAI_BASE_URL_VARIABLE})",
            )
        options = {"base_url": url, "api_key_env": OPENAI_KEY_VARIABLE}
    elif scheme == "openai":
        url = base_url or config.getenv(OPENAI_BASE_URL_VARIABLE) or OPENAI_API_URL
        options = {"base_url": url, "api_key_env": OPENAI_KEY_VARIABLE}
    elif base_url is not None:
        raise ConfigError(
            f"--base-url connects to a running server; model spec '{name}' starts its own",
            hint="use openai-compatible/<model> with --base-url",
        )
    if scheme in ("vllm", "sglang") and model.startswith("~"):
        model = str(Path(model).expanduser())
    if not model:
        where = f" (or set {MODEL_NAME_VARIABLE})" if scheme == "openai-compatible" else ""
        raise ConfigError(f"model spec '{name}' names no model", hint=f"write {scheme}/<model>{where}")
    return BackendSpec(
        name=name,
        backend=backend,
        model=model,
        options=options,
        description=f"ad-hoc model spec {scheme}/{model}",
    )


def implicit_spec(base_url: str | None) -> str | None:
    """The spec ``run`` uses when ``--model`` is not given: ``openai-compatible`` when an endpoint
    is named (``--base-url`` or ``OPENAI_BASE_URL``), as the reference harness runs; else ``None``."""
    if base_url or config.getenv(OPENAI_BASE_URL_VARIABLE):
        return "openai-compatible"
    return None
