"""The ``vllm`` backend: command-line construction and configuration errors (fast), and a real
``vllm serve`` on the CPU (marker ``vllm``) answering two NL4OPT prompts with SmolLM2-135M.

The real test needs what ``scripts/setup_vllm_cpu.sh`` builds: a vLLM virtualenv whose ``vllm``
is named by ``TREX_VLLM_EXECUTABLE``, and SmolLM2 converted to safetensors in the trex-eval cache.
Under CI a missing piece is a failure, elsewhere a skip.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from ci_required import required

from trex_eval import config
from trex_eval.backends import BackendSpec, GenerationRequest, create_backend
from trex_eval.backends.model_files import hf_export_dir
from trex_eval.backends.presets import resolve_preset
from trex_eval.backends.vllm import VLLMBackend, VLLMOptions, serve_argv
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.prompting.render import PromptRenderer
from trex_eval.records import Completion, SamplingParams

MAX_TOKENS = 48


@pytest.fixture(autouse=True)
def server_logs_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Server logs default to the temp dir; keep this module's inside pytest's tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def test_serve_argv_maps_every_option_to_its_vllm_flag() -> None:
    options = VLLMOptions(
        tensor_parallel_size=4,
        data_parallel_size=2,
        gpu_memory_utilization=0.85,
        max_model_len=16384,
        dtype="bfloat16",
        reasoning_parser="deepseek_r1",
        chat_template="/templates/chat.jinja",
        extra_args="--enforce-eager --generation-config 'vllm'",
    )
    argv = serve_argv("/venv/bin/vllm", "org/Model-7B", options, port=8123)
    assert argv == (
        "/venv/bin/vllm", "serve", "org/Model-7B",
        "--host", "127.0.0.1", "--port", "8123", "--served-model-name", "org/Model-7B",
        "--tensor-parallel-size", "4", "--data-parallel-size", "2",
        "--gpu-memory-utilization", "0.85", "--max-model-len", "16384", "--dtype", "bfloat16",
        "--reasoning-parser", "deepseek_r1", "--chat-template", "/templates/chat.jinja",
        "--enforce-eager", "--generation-config", "vllm",
    )  # fmt: skip


def test_unset_options_leave_vllm_defaults() -> None:
    assert serve_argv("vllm", "m", VLLMOptions(), port=9) == (
        "vllm", "serve", "m", "--host", "127.0.0.1", "--port", "9", "--served-model-name", "m",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("extra_args", "message"),
    [
        ("--port 9000", r"may not set --port"),
        ("--host=0.0.0.0 --served-model-name x", r"may not set --host, --served-model-name"),
        ("--chat-template 'unclosed", r"not valid shell quoting"),
        ("--api-key=secret", r"may not set --api-key"),
    ],
)
def test_extra_args_cannot_break_what_the_backend_owns(extra_args: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        serve_argv("vllm", "m", VLLMOptions(extra_args=extra_args), port=9)


def test_a_missing_executable_names_the_extra_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TREX_VLLM_EXECUTABLE", str(tmp_path / "missing" / "vllm"))
    with pytest.raises(ConfigError) as caught:
        create_backend(BackendSpec(name="big", backend="vllm", model="org/Model"))
    assert "vllm executable" in str(caught.value) and "not found" in str(caught.value)
    assert caught.value.hint is not None
    assert "trex-eval[vllm]" in caught.value.hint and "TREX_VLLM_EXECUTABLE" in caught.value.hint


@pytest.fixture()
def any_executable(monkeypatch: pytest.MonkeyPatch) -> str:
    """A real executable standing in for vllm, for checks that happen before anything starts."""
    monkeypatch.setenv("TREX_VLLM_EXECUTABLE", sys.executable)
    return sys.executable


def test_options_are_split_between_server_and_client(any_executable: str) -> None:
    backend = create_backend(
        BackendSpec(
            name="big",
            backend="vllm",
            model="org/Model",
            options={"tensor_parallel_size": 2, "concurrency": 8, "max_retries": 1},
        )
    )
    assert isinstance(backend, VLLMBackend)
    assert backend.executable == any_executable
    assert backend.options.tensor_parallel_size == 2
    assert backend._client_spec.options == {"concurrency": 8, "max_retries": 1}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tensor_parallel": 2}, r"unknown option 'tensor_parallel' for backend 'vllm'"),
        ({"gpu_memory_utilization": 1.5}, r"gpu_memory_utilization: Input should be less than or equal to 1"),
        ({"api_key_env": "KEY"}, r"api_key_env cannot be set for backend 'vllm'"),
        ({"extra_args": "--port 1"}, r"may not set --port"),
    ],
)
def test_bad_options_fail_at_creation(any_executable: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_backend(BackendSpec(name="big", backend="vllm", model="org/Model", options=options))  # type: ignore[arg-type]


def test_a_model_is_required(any_executable: str) -> None:
    with pytest.raises(ConfigError, match="needs a model"):
        create_backend(BackendSpec(name="big", backend="vllm", model=""))


# --------------------------------------------------------------------------- real server


def _require(condition: bool, why: str) -> None:
    required(condition, why, in_ci="CI must run the vllm test: .ci/run calls scripts/setup_vllm_cpu.sh")


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_cpu_serves_smollm2_for_two_nl4opt_prompts(data_dir: Path) -> None:
    executable = config.getenv("TREX_VLLM_EXECUTABLE")
    _require(executable is not None and Path(executable).is_file(), "TREX_VLLM_EXECUTABLE is not set")
    model_dir = hf_export_dir("smollm2-135m-instruct-q4")
    _require((model_dir / "config.json").is_file(), f"no converted SmolLM2 at {model_dir}")

    benchmark = load_benchmark("nl4opt", data_dir=data_dir)
    renderer = PromptRenderer(benchmark, "t-rex")
    problems = benchmark.problems[:2]
    # The ad-hoc spec, as `trex-eval run --model vllm/<path>` resolves it: no preset needed.
    spec = resolve_preset(
        f"vllm/{model_dir}",
        presets={},
        overrides={
            # vLLM's CPU backend reserves this fraction of the NUMA node's RAM; its 0.92 default
            # fails on a machine that runs anything else.
            "gpu_memory_utilization": "0.2",
            "max_model_len": "4096",
            # torch.compile of the model takes minutes on 2 cores and buys nothing for 100 tokens.
            "extra_args": "--enforce-eager",
            "startup_timeout_s": "600",
        },
    )
    assert (spec.backend, spec.model) == ("vllm", str(model_dir))
    backend = create_backend(spec)

    async def scenario() -> tuple[list[Completion], dict[str, object], int | None]:
        await backend.start()
        try:
            completions = await asyncio.gather(
                *(
                    backend.generate(
                        GenerationRequest(
                            problem=problem,
                            prompt=renderer.render(problem),
                            params=SamplingParams(max_tokens=MAX_TOKENS),
                            seed=42 + index,
                        )
                    )
                    for index, problem in enumerate(problems)
                )
            )
            facts = dict(backend.describe())
        finally:
            await backend.close()
        server = getattr(backend, "_server", None)
        return completions, facts, server.pid if server is not None else None

    completions, facts, pid = asyncio.run(scenario())

    for index, (problem, completion) in enumerate(zip(problems, completions, strict=True)):
        assert completion.error is None, completion.error
        assert completion.problem_id == problem.id
        assert completion.text.strip()
        assert completion.model == str(model_dir)
        assert completion.seed == 42 + index
        tokens = completion.usage.completion_tokens
        assert tokens is not None and 0 < tokens <= MAX_TOKENS
        assert completion.finish_reason == ("length" if tokens == MAX_TOKENS else "stop")
        assert completion.usage.prompt_tokens is not None and completion.usage.prompt_tokens > 100
    assert str(facts["server"]).startswith("vllm 0.")
    assert facts["download"] == f"local folder {model_dir}" and facts["revision_resolved"] is None
    assert all(c.endpoint == facts["endpoint"] + "/v1" for c in completions)
    assert facts["model_path"] == str(model_dir.resolve())
    argv = facts["argv"]
    assert isinstance(argv, list) and argv[:3] == [executable, "serve", str(model_dir)]
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    endpoint = urlsplit(str(facts["endpoint"]))
    with socket.socket() as probe:
        assert probe.connect_ex((endpoint.hostname or "", endpoint.port or 0)) != 0
