"""Ad-hoc model specs (``vllm/<id>``, ``openai/<model>``, ``openai-compatible/<model>``,
``local/<key>``), the reference harness's OPENAI_* / MODEL_NAME variables, keyless loopback
endpoints, presets extending a spec, and a whole ``trex-eval run --base-url`` against a real
loopback server."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_process import trex_eval
from fake_server import FakeOpenAIServer

from trex_eval.backends import create_backend
from trex_eval.backends.presets import load_presets, read_presets_file, resolve_preset
from trex_eval.backends.specs import GRAMMAR, is_spec, parse_spec
from trex_eval.errors import ConfigError

OPENAI_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MODEL_NAME")


@pytest.fixture(autouse=True)
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OPENAI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TREX_CONFIG_DIR", str(tmp_path / "config"))


def test_vllm_and_local_specs_name_backend_and_model() -> None:
    presets = load_presets()
    spec = resolve_preset(
        "vllm/Qwen/Qwen2.5-7B-Instruct", presets=presets, overrides={"tensor_parallel_size": "2"}
    )
    assert (spec.name, spec.backend, spec.model) == (
        "vllm/Qwen/Qwen2.5-7B-Instruct",
        "vllm",
        "Qwen/Qwen2.5-7B-Instruct",
    )
    assert spec.options == {"tensor_parallel_size": "2"}
    assert (spec.sampling.temperature, spec.sampling.max_tokens, spec.sampling.seed) == (0.6, 9600, 42)
    assert resolve_preset("vllm//ckpt/step-900", presets=presets).model == "/ckpt/step-900"
    assert resolve_preset("vllm/~/ckpt", presets=presets).model == str(Path.home() / "ckpt")
    local = resolve_preset("local/smollm2-135m-instruct-q4", presets=presets)
    assert (local.backend, local.model) == ("local", "smollm2-135m-instruct-q4")
    assert resolve_preset("sglang/org/m", presets=presets).backend == "sglang"
    assert is_spec("openai-compatible") and not is_spec("deepseek-v4-flash-or") and not is_spec("gpt/4")


def test_openai_spec_reads_the_reference_harness_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = parse_spec("openai/gpt-4o")
    assert spec.options == {"base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY"}
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-recorded")
    spec = parse_spec("openai/gpt-4o")
    assert spec.options["base_url"] == "https://gateway.example/v1"
    assert "sk-never-recorded" not in spec.model_dump_json()  # only the variable's name
    described = create_backend(spec).describe()
    assert described["authentication"] == "bearer token from $OPENAI_API_KEY"
    monkeypatch.setenv("MODEL_NAME", "served-by-env")
    compatible = parse_spec("openai-compatible")
    assert (compatible.model, compatible.options["base_url"]) == (
        "served-by-env",
        "https://gateway.example/v1",
    )


def test_openai_compatible_needs_an_endpoint_and_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="needs an endpoint") as error:
        parse_spec("openai-compatible/m")
    assert "--base-url" in str(error.value)
    with pytest.raises(ConfigError, match="names no model") as error:
        parse_spec("openai-compatible", base_url="http://127.0.0.1:1/v1")
    assert "MODEL_NAME" in str(error.value)
    with pytest.raises(ConfigError, match="starts its own"):
        resolve_preset("vllm/org/m", presets={}, base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="ad-hoc spec: vllm/<hub id or path>"):
        resolve_preset("Qwen/Qwen2.5-7B", presets={})


def test_a_remote_endpoint_without_the_key_variable_stops_before_any_request() -> None:
    backend = create_backend(parse_spec("openai-compatible/m", base_url="http://192.0.2.1:9/v1"))
    import asyncio

    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        asyncio.run(backend.start())


def test_a_preset_can_extend_a_spec(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(
        textwrap.dedent(
            """
            qwen-7b:
              extends: vllm/Qwen/Qwen2.5-7B-Instruct
              options: {tensor_parallel_size: 2}
              sampling: {temperature: 0.0, max_tokens: 4096}
            my-gateway:
              extends: openai-compatible/served-model
              options: {base_url: "http://127.0.0.1:8000/v1", concurrency: 32}
            broken:
              backend: local
              extends: vllm/org/m
            """
        ).lstrip()
    )
    with pytest.raises(ConfigError, match=r"models.yaml:8: preset 'broken': .*extends a vllm spec"):
        read_presets_file(path)
    path.write_text(path.read_text().split("broken:")[0])
    presets = read_presets_file(path)
    qwen = presets["qwen-7b"]
    assert (qwen.backend, qwen.model, qwen.options) == (
        "vllm",
        "Qwen/Qwen2.5-7B-Instruct",
        {"tensor_parallel_size": 2},
    )
    assert (qwen.sampling.temperature, qwen.sampling.max_tokens) == (0.0, 4096)
    gateway = presets["my-gateway"]
    assert gateway.options == {
        "base_url": "http://127.0.0.1:8000/v1",
        "api_key_env": "OPENAI_API_KEY",
        "concurrency": 32,
    }


def test_models_command_documents_the_grammar() -> None:
    done = trex_eval("models", columns=200)
    for line in GRAMMAR.splitlines():
        assert line.strip() in done.stdout
    assert "vllm/<hub id or local path>" in done.stdout and "openai-compatible/<model>" in done.stdout


def test_run_with_base_url_and_model_name_on_a_keyless_loopback_server(
    tmp_path: Path, data_dir: Path
) -> None:
    with FakeOpenAIServer(models=("my-model",)) as server:
        done = trex_eval(
            "run", "--base-url", server.base_url, "-b", "nl4opt", "--limit", "2", "--no-progress",
            "--data-dir", str(data_dir), "--out", str(tmp_path / "run"),
            env={"MODEL_NAME": "my-model", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""},
            timeout=300,
        )  # fmt: skip
        requests = server.chat_requests()
    assert "2 generated, 2 graded" in done.stdout
    assert len(requests) == 2 and all(r.body and r.body["model"] == "my-model" for r in requests)
    assert all("authorization" not in r.headers for r in requests)  # keyless on loopback
    lines = [json.loads(line) for line in (tmp_path / "run" / "completions.jsonl").read_text().splitlines()]
    assert [line["completion"]["endpoint"] for line in lines] == [server.base_url] * 2
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    backend = manifest["provenance"]["backend"]
    assert backend["authentication"] == "none ($OPENAI_API_KEY unset; loopback endpoint)"
    assert backend["endpoints"] == [server.base_url]
    assert manifest["settings"]["model"]["name"] == "openai-compatible"


def test_the_readme_quickstart_shows_the_spec_grammar_and_the_scale_out_recipes() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    for scheme in ("vllm/<hub id or path>", "sglang/<id>", "openai/<model>", "openai-compatible/<model>"):
        assert scheme in quickstart
    assert "local/<key>" in quickstart
    assert "trex-eval run --model vllm/" in quickstart and "OPENAI_BASE_URL=" in quickstart
    assert "MODEL_NAME=" in quickstart and "--base-url http://127.0.0.1" in quickstart
    # Several endpoints in one command, and one model over several nodes with Ray.
    assert "--base-url http://node1:8000/v1,http://node2:8000/v1" in quickstart
    assert "ray start --head" in quickstart and "ray start --address=" in quickstart
    assert "--opt nodes=2 --opt ray_address=" in quickstart
    assert "--dry-run" in quickstart and "docs/scale-out.md" in quickstart
