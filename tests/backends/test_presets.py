"""Model presets: the shipped file, user overrides, error locations, command-line resolution."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from cli_process import trex_eval
from fake_server import FakeOpenAIServer

from trex_eval.backends import create_backend
from trex_eval.backends.base import BackendSpec, GenerationRequest
from trex_eval.backends.presets import load_presets, read_presets_file, resolve_preset
from trex_eval.errors import ConfigError
from trex_eval.records import ChatMessage, ObjectiveReference, Problem, Prompt

SHIPPED = {
    "deepseek-v4-flash-or",
    "deepseek-v4-flash",
    "deepseek-v4-flash-or-sft",
    "deepseek-v4-flash-or-cpt-sft",
    "deepseek-v4-flash-api",
    "local-qwen-coder",
    "local-smollm2",
    "reference",
    "replay",
}


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user config folder, so that a developer's own models.yaml never leaks in."""
    folder = tmp_path / "config"
    folder.mkdir()
    monkeypatch.setenv("TREX_CONFIG_DIR", str(folder))
    return folder


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_shipped_presets() -> None:
    presets = load_presets()
    assert set(presets) == SHIPPED
    assert all(spec.name == name for name, spec in presets.items())
    assert all(spec.description for spec in presets.values())
    # The T-Rex protocol (reference harness §6.2, launch_eval.sh): 0.6 / 1.0 / 9600 / seed 42;
    # the CPU demo models cap max_tokens (a looping answer would run for many minutes).
    cpu_caps = {"local-qwen-coder": 2048, "local-smollm2": 1024}
    for name, spec in presets.items():
        sampling = spec.sampling
        assert (sampling.temperature, sampling.top_p, sampling.max_tokens, sampling.seed) == (
            0.6,
            1.0,
            cpu_caps.get(name, 9600),
            42,
        )
    # The T-Rex release publishes the checkpoint on ModelScope, not on the Hugging Face hub.
    trex = presets["deepseek-v4-flash-or"]
    assert (trex.backend, trex.model) == ("vllm", "SLAIAITP/DeepSeek-V4-Flash-OR")
    assert (trex.options["hub"], trex.options["large"]) == ("modelscope", True)
    assert presets["deepseek-v4-flash"].backend == "vllm"
    assert "hub" not in presets["deepseek-v4-flash"].options and presets["deepseek-v4-flash"].options["large"]
    api = presets["deepseek-v4-flash-api"]
    assert api.backend == "openai"
    assert api.options["base_url"] == "https://api.deepseek.com"
    assert api.options["api_key_env"] == "DEEPSEEK_API_KEY"
    assert presets["local-qwen-coder"].model == "qwen2.5-coder-1.5b-instruct-q4"
    assert presets["local-smollm2"].model == "smollm2-135m-instruct-q4"
    assert {presets[n].backend for n in ("local-qwen-coder", "local-smollm2")} == {"local"}
    assert (presets["reference"].backend, presets["replay"].backend) == ("reference", "replay")
    for ablation in ("deepseek-v4-flash-or-sft", "deepseek-v4-flash-or-cpt-sft"):
        assert presets[ablation].backend == "vllm"
        assert "override" in presets[ablation].description


def test_network_free_and_api_presets_construct_their_backends() -> None:
    presets = load_presets()
    for name, overrides in (
        ("reference", {}),
        ("replay", {"path": "samples.jsonl"}),
        ("deepseek-v4-flash-api", {}),
    ):
        backend = create_backend(resolve_preset(name, presets=presets, overrides=overrides))
        assert backend.describe()["backend"] in ("reference", "replay", "openai")
    description = create_backend(resolve_preset("deepseek-v4-flash-api", presets=presets)).describe()
    assert description["endpoint"] == "https://api.deepseek.com/v1"
    assert description["authentication"] == "bearer token from $DEEPSEEK_API_KEY"


def test_user_files_replace_presets_by_name_in_order(config_dir: Path, tmp_path: Path) -> None:
    write(
        config_dir / "models.yaml",
        """
        deepseek-v4-flash-or-sft:
          backend: vllm
          model: /ckpt/sft
          description: my SFT checkpoint
        my-endpoint:
          backend: openai
          model: m-from-config
          options: {base_url: "http://gpu-box:8000/v1", concurrency: 64}
        """,
    )
    cli_file = write(
        tmp_path / "cli.yaml",
        """
        my-endpoint:
          backend: openai
          model: m-from-cli
          options: {base_url: "http://other:8000/v1"}
        """,
    )
    from_config = load_presets()
    assert from_config["deepseek-v4-flash-or-sft"].model == "/ckpt/sft"
    assert from_config["deepseek-v4-flash-or-sft"].options == {}  # replaced whole, not merged
    assert from_config["my-endpoint"].model == "m-from-config"
    assert set(from_config) == SHIPPED | {"my-endpoint"}

    from_cli = load_presets(user_file=cli_file)
    assert from_cli["my-endpoint"].model == "m-from-cli"
    assert from_cli["my-endpoint"].options == {"base_url": "http://other:8000/v1"}
    assert from_cli["deepseek-v4-flash-or-sft"].model == "/ckpt/sft"


def test_models_command_shows_every_name_whole_on_a_narrow_terminal(config_dir: Path, tmp_path: Path) -> None:
    cli_file = write(
        tmp_path / "cli.yaml",
        """
        my-rather-long-checkpoint-name-cpt-sft-step-12000:
          backend: openai
          model: served-name
          description: First sentence. Second sentence that the table leaves out.
        """,
    )
    done = trex_eval(
        "models", "--models-file", str(cli_file), columns=80, env={"TREX_CONFIG_DIR": str(config_dir)}
    )
    names = {
        line.split()[0] for line in done.stdout.splitlines() if line.strip() and not line.startswith(" ")
    }
    assert SHIPPED | {"my-rather-long-checkpoint-name-cpt-sft-step-12000"} <= names
    assert "First sentence." in done.stdout and "Second sentence" not in done.stdout
    assert "models.yaml" in done.stderr  # where the format is described and where user presets go


def test_a_missing_models_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="models file not found"):
        load_presets(user_file=tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "a:\n  backend: openai\n  optons: {}\n",
            3,
            r"preset 'a', field 'optons': Extra inputs are not permitted",
        ),
        (
            "a:\n  backend: reference\n  sampling:\n    top_p: 1.0\n    temperature: hot\n",
            5,
            r"field 'sampling.temperature'",
        ),
        ("a:\n  backend: reference\n  options:\n    nested: {x: 1}\n", 4, r"field 'options.nested"),
        ("a:\n  backend: vllmm\n", 2, r"field 'backend': Value error, unknown backend 'vllmm'"),
        ("a:\n  model: x\n", 2, r"give a backend, or a model spec to extend"),
        ("a:\n  extends: gpt-4o\n", 2, r"field 'extends': Value error, 'gpt-4o' is not a model spec"),
        (
            "a:\n  backend: reference\nb:\n  backend: reference\na:\n  backend: openai\n",
            5,
            r"'a' is defined twice \(first on line 1\)",
        ),
        ("a:\n  backend: reference\n   bad: indent\n", 3, r"invalid YAML"),
        ("'bad name!':\n  backend: reference\n", 1, r"invalid preset name"),
        ("- a\n- b\n", 1, r"must be a mapping"),
        ("a:\n  backend: openai\n  options: {extra_body: '{}'}\n", 3, r"write extra_body as a mapping"),
    ],
)
def test_errors_name_file_line_and_field(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        read_presets_file(path)
    assert error.value.where == f"{path}:{line}"


def test_an_empty_file_defines_nothing(tmp_path: Path) -> None:
    assert read_presets_file(write(tmp_path / "empty.yaml", "# nothing yet\n")) == {}


def test_resolve_applies_overrides() -> None:
    presets = load_presets()
    spec = resolve_preset(
        "deepseek-v4-flash-api",
        presets=presets,
        overrides={
            "model": "deepseek-chat",
            "base_url": "http://127.0.0.1:8000/v1",
            "concurrency": "64",
            "temperature": "0.2",
            "max_tokens": "2048",
            "seed": "none",
            "api_key_env": "",
        },
    )
    assert spec.model == "deepseek-chat"
    assert spec.options == {"base_url": "http://127.0.0.1:8000/v1", "concurrency": "64"}
    assert (spec.sampling.temperature, spec.sampling.top_p, spec.sampling.max_tokens, spec.sampling.seed) == (
        0.2,
        1.0,
        2048,
        None,
    )
    assert presets["deepseek-v4-flash-api"].options["api_key_env"] == "DEEPSEEK_API_KEY"  # input untouched
    assert create_backend(spec).describe()["options"]["concurrency"] == 64  # type: ignore[index]


def test_resolve_rejects_bad_sampling_and_unknown_names() -> None:
    presets = load_presets()
    with pytest.raises(ConfigError, match="invalid override temperature='hot'"):
        resolve_preset("reference", presets=presets, overrides={"temperature": "hot"})
    with pytest.raises(ConfigError, match="unknown model preset 'deepseek-v4-flash-ro'") as error:
        resolve_preset("deepseek-v4-flash-ro", presets=presets)
    assert "did you mean 'deepseek-v4-flash-or'" in str(error.value)
    with pytest.raises(ConfigError, match=r"known presets: .*local-smollm2"):
        resolve_preset("gpt-17", presets=presets)


def test_placeholder_models_must_be_overridden() -> None:
    presets = load_presets()
    with pytest.raises(ConfigError, match="has no model yet") as error:
        resolve_preset("deepseek-v4-flash-or-cpt-sft", presets=presets)
    assert "--opt model=" in str(error.value)
    spec = resolve_preset(
        "deepseek-v4-flash-or-cpt-sft", presets=presets, overrides={"model": "/ckpt/cpt-sft"}
    )
    assert spec.model == "/ckpt/cpt-sft" and spec.backend == "vllm"


def test_chat_template_kwargs_reach_the_server(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        path = write(
            tmp_path / "models.yaml",
            f"""
            thinking-endpoint:
              backend: openai
              model: served-model
              options: {{base_url: "{server.base_url}", concurrency: 2}}
              chat_template_kwargs: {{enable_thinking: true}}
              extra_body: {{top_k: 20}}
              sampling: {{temperature: 0.7}}
            """,
        )
        spec = resolve_preset("thinking-endpoint", presets=load_presets(user_file=path))
        assert json.loads(str(spec.options["extra_body"])) == {
            "chat_template_kwargs": {"enable_thinking": True},
            "top_k": 20,
        }
        asyncio.run(_one_request(spec))
        (seen,) = server.chat_requests()
    assert seen.body is not None
    assert seen.body["chat_template_kwargs"] == {"enable_thinking": True}
    assert (seen.body["top_k"], seen.body["temperature"], seen.body["max_tokens"]) == (20, 0.7, 9600)


async def _one_request(spec: BackendSpec) -> None:
    backend = create_backend(spec)
    problem = Problem(
        benchmark="toy", id="p", index=0, question="q", reference=ObjectiveReference(value=1, label="1")
    )
    prompt = Prompt(
        problem_id="p",
        prompt_set="t",
        messages=(ChatMessage(role="user", content="p"),),
        template_sha256="0" * 64,
    )
    await backend.start()
    try:
        completion = await backend.generate(
            GenerationRequest(problem=problem, prompt=prompt, params=spec.sampling)
        )
    finally:
        await backend.close()
    assert completion.error is None
