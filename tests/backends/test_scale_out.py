"""Scale-out of the managed servers, at the command-line level: visible GPUs (a fake
``nvidia-smi`` on PATH, ``CUDA_VISIBLE_DEVICES``), the ``vllm serve`` argv for 1, 4 and 8 GPUs,
the weights-fit check, the Ray multi-node recipe, ModelScope and revisions, ``--dry-run``, and
the SGLang command line. Nothing here starts a model server."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.backends import gpus as gpu_probe
from trex_eval.backends import hub
from trex_eval.backends.presets import load_presets, resolve_preset
from trex_eval.backends.sglang import SGLangOptions, launch_argv
from trex_eval.backends.vllm import VLLMOptions, dry_run, plan_serve, ray_recipe
from trex_eval.errors import ConfigError

H200_MIB = 143771
A100_MIB = 81920


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No real GPU mask, hub cache or user presets leak in; a fake nvidia-smi comes first on PATH."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    monkeypatch.setenv("TREX_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("TREX_VLLM_EXECUTABLE", "vllm")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def fake_nvidia_smi(tmp_path: Path, count: int, memory_mib: int = H200_MIB) -> None:
    """An ``nvidia-smi`` that lists ``count`` GPUs and refuses any other query."""
    rows = "\\n".join(f"{i}, GPU-{i:08d}-aaaa-bbbb, {memory_mib}" for i in range(count))
    script = tmp_path / "bin" / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--query-gpu=index,uuid,memory.total" ] && '
        '[ "$2" = "--format=csv,noheader,nounits" ]; then\n'
        f'  printf "{rows}\\n"; exit 0\nfi\necho "unexpected: $*" >&2; exit 9\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def flag(argv: tuple[str, ...], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def preset_options(name: str, **extra: str) -> VLLMOptions:
    spec = resolve_preset(name, presets=load_presets(), overrides=extra)
    keys = set(VLLMOptions.model_fields)
    return VLLMOptions.model_validate({k: v for k, v in spec.options.items() if k in keys})


# --------------------------------------------------------------------------- GPU detection


@pytest.mark.parametrize("count", [1, 4, 8])
def test_gpus_are_counted_from_nvidia_smi(tmp_path: Path, count: int) -> None:
    fake_nvidia_smi(tmp_path, count)
    seen = gpu_probe.visible_gpus()
    assert (seen.count, seen.memory_mib, seen.source) == (count, (H200_MIB,) * count, "nvidia-smi")


@pytest.mark.parametrize(
    ("mask", "count"),
    [("0,1,2,3", 4), ("", 0), ("-1", 0), ("2,5", 2), ("0,1,-1,3", 2), ("GPU-00000003-aaaa-bbbb", 1)],
)
def test_cuda_visible_devices_wins_over_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mask: str, count: int
) -> None:
    fake_nvidia_smi(tmp_path, 8, memory_mib=A100_MIB)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", mask)
    seen = gpu_probe.visible_gpus()
    assert seen.count == count and seen.source == f"CUDA_VISIBLE_DEVICES={mask}"
    assert seen.memory_mib == (A100_MIB,) * count  # matched by index or UUID


def test_no_driver_and_no_mask_means_no_gpu() -> None:
    assert gpu_probe.visible_gpus().count == 0


# --------------------------------------------------------------------------- vllm serve argv


@pytest.mark.parametrize("count", [4, 8])
def test_the_large_t_rex_preset_takes_every_visible_gpu(tmp_path: Path, count: int) -> None:
    fake_nvidia_smi(tmp_path, count)
    plan = plan_serve(
        "vllm", "SLAIAITP/DeepSeek-V4-Flash-OR", preset_options("deepseek-v4-flash-or"), port=8000
    )
    assert plan.problem is None
    assert plan.argv == (
        "vllm", "serve", "SLAIAITP/DeepSeek-V4-Flash-OR", "--host", "127.0.0.1", "--port", "8000",
        "--served-model-name", "SLAIAITP/DeepSeek-V4-Flash-OR", "--tensor-parallel-size", str(count),
    )  # fmt: skip
    assert plan.environment == {"VLLM_USE_MODELSCOPE": "True"}
    assert plan.parallelism["tensor_parallel_size"] == count


def test_one_gpu_cannot_hold_the_t_rex_model_and_says_so_before_start_up(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path, 1)
    plan = plan_serve(
        "vllm", "SLAIAITP/DeepSeek-V4-Flash-OR", preset_options("deepseek-v4-flash-or"), port=8000
    )
    assert flag(plan.argv, "--tensor-parallel-size") == "1"
    assert plan.problem is not None and "265.0 GiB" in plan.problem and "1 GPU(s) of 140 GiB" in plan.problem
    with pytest.raises(ConfigError, match="cannot start as planned") as error:
        plan.check()
    assert "1 visible GPU(s), nvidia-smi" in str(error.value)


def test_data_and_pipeline_parallel_divide_the_gpus_and_options_win(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path, 8)
    large = VLLMOptions(large=True, data_parallel_size=2, pipeline_parallel_size=2)
    argv = plan_serve("vllm", "org/m", large, port=1).argv
    assert (flag(argv, "--tensor-parallel-size"), flag(argv, "--data-parallel-size")) == ("2", "2")
    assert flag(argv, "--pipeline-parallel-size") == "2"
    explicit = plan_serve("vllm", "org/m", VLLMOptions(large=True, tensor_parallel_size=2), port=1)
    assert flag(explicit.argv, "--tensor-parallel-size") == "2"
    assert explicit.parallelism["tensor_parallel_from"] == "tensor_parallel_size set in options"
    small = plan_serve("vllm", "org/m", VLLMOptions(), port=1)
    assert "--tensor-parallel-size" not in small.argv  # not marked large: vLLM's default
    too_many = plan_serve("vllm", "org/m", VLLMOptions(tensor_parallel_size=16), port=1)
    assert too_many.problem == "the layout needs 16 GPUs on this node but 8 are visible"


def test_the_weights_of_a_local_checkpoint_are_measured_from_its_index(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path, 2, memory_mib=24576)
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 60 * 1024**3}, "weight_map": {}})
    )
    plan = plan_serve("vllm", str(checkpoint), VLLMOptions(large=True), port=1)
    assert plan.weights_from == "model.safetensors.index.json metadata.total_size"
    assert plan.problem is not None and "60.0 GiB" in plan.problem  # 2 x 24 GiB x 0.9 = 43.2 GiB
    assert plan.source.label() == f"local folder {checkpoint}"


# --------------------------------------------------------------------------- multi-node (Ray)


def test_the_ray_recipe_spans_nodes_with_pipeline_stages(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path, 8)
    options = VLLMOptions(large=True, nodes=2, ray_address="10.0.0.1:6379")
    plan = plan_serve("vllm", "deepseek-ai/DeepSeek-V4-Flash", options, port=8000)
    assert plan.argv[-6:] == (
        "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2",
        "--distributed-executor-backend", "ray",
    )  # fmt: skip
    assert plan.environment == {"RAY_ADDRESS": "10.0.0.1:6379"}
    assert plan.ray_recipe == {
        "head": ("ray", "start", "--head", "--port=6379", "--num-gpus=8"),
        "worker": ("ray", "start", "--address=10.0.0.1:6379", "--num-gpus=8"),
        "check": ("ray", "status"),
    }
    assert ray_recipe(nodes=4, gpus_per_node=4)["worker"] == (
        "ray", "start", "--address=<head-ip>:6379", "--num-gpus=4",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="needs distributed_executor_backend ray"):
        plan_serve("vllm", "m", VLLMOptions(nodes=2, distributed_executor_backend="mp"), port=1)


# --------------------------------------------------------------------------- sources and revisions


def test_revision_pins_and_resolves_from_the_hub_cache(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    refs = tmp_path / "hf" / "models--deepseek-ai--DeepSeek-V4-Flash" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(commit)
    (refs.parent / "snapshots" / commit).mkdir(parents=True)
    (refs.parent / "snapshots" / commit / "model-00001.safetensors").write_bytes(b"\0" * 4096)
    source = hub.model_source("deepseek-ai/DeepSeek-V4-Flash", hub=None, revision=None)
    assert hub.resolved_revision(source) == commit
    assert hub.cached_snapshot(source) == refs.parent / "snapshots" / commit
    plan = plan_serve("vllm", "deepseek-ai/DeepSeek-V4-Flash", VLLMOptions(revision="v1.1"), port=1)
    assert flag(plan.argv, "--revision") == "v1.1"
    assert hub.resolved_revision(plan.source) is None  # no ref v1.1 in the cache: not guessed
    pinned = hub.model_source("org/m", hub="modelscope", revision=commit)
    assert hub.resolved_revision(pinned) == commit
    assert pinned.label().startswith("ModelScope org/m @ ")


def test_dry_run_shows_the_modelscope_id_and_tensor_parallel_8_on_8_gpus(
    tmp_path: Path, data_dir: Path
) -> None:
    fake_nvidia_smi(tmp_path, 8)
    # The dry run refuses (exit 2) where no vllm executable exists; one that is never started suffices.
    fake_vllm = tmp_path / "bin" / "vllm"
    fake_vllm.write_text("#!/bin/sh\nexit 1\n")
    fake_vllm.chmod(0o755)
    done = trex_eval(
        "run", "--model", "deepseek-v4-flash-or", "--dry-run", "-b", "nl4opt",
        "--data-dir", str(data_dir), columns=400, cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "TREX_VLLM_EXECUTABLE": "vllm"},
    )  # fmt: skip
    text = done.stdout
    assert "vllm serve SLAIAITP/DeepSeek-V4-Flash-OR" in text
    assert "--tensor-parallel-size 8" in text
    assert "ModelScope SLAIAITP/DeepSeek-V4-Flash-OR" in text
    assert '"VLLM_USE_MODELSCOPE": "True"' in text
    assert "first prompt: nl4opt /" in text and "--- user ---" in text
    assert "nothing was started" in text
    assert not (tmp_path / "results").exists()


def test_dry_run_facts_need_no_vllm_installed(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path, 4)
    facts = dry_run(resolve_preset("vllm/Qwen/Qwen2.5-7B-Instruct", presets=load_presets()))
    assert facts["argv"][:3] == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]  # type: ignore[index]
    assert "--tensor-parallel-size" not in facts["argv"]  # type: ignore[operator]
    assert (
        facts["download"]
        == "Hugging Face Qwen/Qwen2.5-7B-Instruct (https://huggingface.co/Qwen/Qwen2.5-7B-Instruct)"
    )


# --------------------------------------------------------------------------- SGLang


def test_sglang_command_line(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path, 8)
    argv = launch_argv(
        "/venv/bin/python",
        "org/m",
        SGLangOptions(large=True, data_parallel_size=2, revision="main"),
        port=30000,
    )
    assert argv == (
        "/venv/bin/python", "-m", "sglang.launch_server", "--model-path", "org/m", "--host", "127.0.0.1",
        "--port", "30000", "--served-model-name", "org/m", "--tp-size", "4", "--dp-size", "2",
        "--revision", "main",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="may not set --port"):
        launch_argv("python", "m", SGLangOptions(extra_args="--port 1"), port=2)
