"""Prompt rendering: upstream digests (G16), project templates, few-shot framing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.prompting.render import FewShotExample, PromptRenderer, prompt_set_names
from trex_eval.protocols import get_protocol


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_upstream_digests_g16(data_dir: Path) -> None:
    nl4opt = load_benchmark("nl4opt", data_dir=data_dir)
    prompt = PromptRenderer(nl4opt, "t-rex").render(nl4opt.problems[0])
    system, user = (m.content for m in prompt.messages)
    assert [m.role for m in prompt.messages] == ["system", "user"]
    assert len(system) == 799
    assert _sha(system) == "fa20caeee0baa32a20933508333332019fdc19d57d9d29261e668a9b352abdde"
    assert _sha(user) == "31a7086e75cf86ed6e39d673c034d867a3c613e12ed7eca30747c5da54994fbc"

    optibench = load_benchmark("optibench", data_dir=data_dir)
    prompt = PromptRenderer(optibench, "t-rex").render(optibench.problems[0])
    assert (
        _sha(prompt.messages[0].content) == "fa20caeee0baa32a20933508333332019fdc19d57d9d29261e668a9b352abdde"
    )
    assert (
        _sha(prompt.messages[1].content) == "19f895c9599defcb8e76c9b59291101d4efc0e6304ef4c826f747da31ee3fff5"
    )

    orgeval = load_benchmark("b4o-orgeval", data_dir=data_dir)
    prompt = PromptRenderer(orgeval, "t-rex").render(orgeval.problems[0])
    assert [m.role for m in prompt.messages] == ["user"]
    assert len(prompt.messages[0].content) == 3738
    assert (
        _sha(prompt.messages[0].content) == "787afd8b9a1ec54932e3c60839c48dc871adb5e228f20442ec931778ea6e1e1f"
    )

    feasible = load_benchmark("b4o-feasible", data_dir=data_dir)
    assert feasible.problems[0].id == "BENCH4OPT_2"
    prompt = PromptRenderer(feasible, "t-rex", working_directory="<WD>").render(feasible.problems[0])
    assert (
        _sha(prompt.messages[0].content) == "42d39675bbf53fbbfaa57894d004514f9bfe2d3444b871375e4467011e5dcc62"
    )
    assert len(prompt.messages[1].content) == 4862
    assert (
        _sha(prompt.messages[1].content) == "a5043d66627131382835fcf5f063eb275256583e31ab3f461cae5d6c52e12ce0"
    )


def test_upstream_working_directory_is_machine_independent_except_under_trex_compat(data_dir: Path) -> None:
    """The default protocol's prompts name a fixed stand-in folder, so the same benchmark renders
    the same prompt (and hash) on every machine; trex-compat keeps the reference harness's absolute
    data folder, byte for byte."""
    feasible = load_benchmark("b4o-feasible", data_dir=data_dir)
    local = str((data_dir / "data" / "bench4opt_feasible").resolve())
    default = PromptRenderer(
        feasible, "t-rex", working_directory=get_protocol("default").prompt_working_directory(feasible)
    ).render(feasible.problems[0])
    assert "/trex-eval/data/data/bench4opt_feasible" in default.messages[1].content
    assert str(data_dir.resolve()) not in default.messages[1].content
    assert default == PromptRenderer(feasible, "t-rex").render(feasible.problems[0])
    compat = PromptRenderer(
        feasible, "t-rex", working_directory=get_protocol("trex-compat").prompt_working_directory(feasible)
    ).render(feasible.problems[0])
    assert local in compat.messages[1].content
    assert compat.messages[1].content.replace(local, "/trex-eval/data/data/bench4opt_feasible") == (
        default.messages[1].content
    )


@pytest.mark.parametrize("prompt_set", ["neutral", "pulp", "ortools", "gurobipy"])
@pytest.mark.parametrize("name", ["nl4opt", "b4o-feasible", "b4o-orgeval"])
def test_project_sets_render_every_task(data_dir: Path, prompt_set: str, name: str) -> None:
    bench = load_benchmark(name, data_dir=data_dir)
    renderer = PromptRenderer(bench, prompt_set)
    prompt = renderer.render(bench.problems[1])
    system, user = (m.content for m in prompt.messages)
    assert bench.problems[1].question in user
    assert "```python" in user
    assert ("data.json" in user) == (name != "nl4opt")
    if prompt_set != "neutral":
        assert {"pulp": "PuLP", "ortools": "OR-Tools", "gurobipy": "gurobipy"}[prompt_set] in system
    else:
        assert "PuLP" in user and "gurobipy" in user
    assert len(prompt.template_sha256) == 64
    assert "{{" not in user and "{%" not in user


def test_unknown_prompt_set(data_dir: Path) -> None:
    bench = load_benchmark("nl4opt", data_dir=data_dir)
    with pytest.raises(ConfigError, match="unknown prompt set 'tre'"):
        PromptRenderer(bench, "tre")
    assert prompt_set_names()[0] == "t-rex"


def test_few_shot_framing(data_dir: Path) -> None:
    bench = load_benchmark("nl4opt", data_dir=data_dir)
    renderer = PromptRenderer(bench, "t-rex")
    shots = [FewShotExample("7", renderer.user_text(bench.problems[7]), "answer seven")]
    prompt = renderer.render(bench.problems[0], few_shot=shots)
    roles = [m.role for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert prompt.messages[1].content.startswith("[Few-shot example 1; not the current problem]\n")
    assert prompt.messages[3].content.startswith("[Current problem to solve]\n")
    assert prompt.few_shot_ids == ("7",)

    orgeval = load_benchmark("b4o-orgeval", data_dir=data_dir)
    r2 = PromptRenderer(orgeval, "t-rex")
    prompt = r2.render(
        orgeval.problems[0], few_shot=[FewShotExample("BENCH4OPT_9", r2.user_text(orgeval.problems[9]), "A")]
    )
    assert len(prompt.messages) == 1
    text = prompt.messages[0].content
    assert "### Few-shot example 1 (not current problem)" in text and text.endswith(
        r2.user_text(orgeval.problems[0])
    )
