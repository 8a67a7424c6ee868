"""`trex-eval run --dry-run`: what a run would start, printed, with nothing started.

Resolves the model (preset or ad-hoc spec), asks its backend what it would start or connect to
(:func:`trex_eval.backends.base.dry_run`: for ``vllm`` the server command line, its
environment, the parallelism and why, the GPUs seen and the download source), and renders the
first prompt of the first benchmark. No server, sandbox, request or run directory.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

from rich.markup import escape

from trex_eval.cli._common import out
from trex_eval.run.spec import RunSpec


def print_dry_run(spec: RunSpec, *, data_dir: Path | None) -> None:
    """Print the plan of ``spec`` (see the module docstring)."""
    from trex_eval.backends.base import dry_run
    from trex_eval.run.pipeline import prepare_benchmarks

    model = spec.model
    facts = dict(dry_run(model))
    _line("model", f"{model.name} (backend {model.backend}, model {model.model or '-'})")
    argv = facts.pop("argv", None)
    if isinstance(argv, list) and argv:
        _line("server command", shlex.join(str(a) for a in argv))
    for key in ("environment", "download", "parallelism", "gpus", "weights_gib", "weights_from", "problem"):
        if key in facts:
            value = facts.pop(key)
            if value not in (None, {}, []):
                _line(key, value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    recipe = facts.pop("ray_recipe", None)
    if isinstance(recipe, dict) and recipe:
        for role, command in recipe.items():
            _line(f"ray {role}", shlex.join(str(a) for a in command))
    for key, value in facts.items():
        if key not in ("backend", "model") and value not in (None, {}, []):
            _line(key, value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    s = model.sampling
    _line("sampling", f"temperature={s.temperature} top_p={s.top_p} max_tokens={s.max_tokens} seed={s.seed}")
    first = dataclasses.replace(spec, benchmarks=spec.benchmarks[:1])
    (item,) = prepare_benchmarks(first, data_dir=data_dir)
    problem = item.problems[0]
    prompt = item.renderer.render(problem, few_shot=item.shots.get(problem.id, ()))
    _line("benchmarks", ", ".join(spec.benchmarks))
    _line("first prompt", f"{item.bench.name} / {problem.id} (prompt set {prompt.prompt_set})")
    for message in prompt.messages:
        out.print(f"--- {message.role} ---", highlight=False, markup=False)
        out.print(message.content, highlight=False, markup=False, soft_wrap=True)
    out.print("dry run: nothing was started", highlight=False, markup=False)


def _line(label: str, value: str) -> None:
    out.print(f"[bold]{escape(label)}:[/bold] {escape(value)}", highlight=False, soft_wrap=True)
