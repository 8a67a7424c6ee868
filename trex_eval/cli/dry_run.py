"""`trex-eval run --dry-run`: what a run would start and cost, printed, with nothing started.

Resolves the model (preset or ad-hoc spec), asks its backend what it would start or connect to
(:func:`trex_eval.backends.base.dry_run`: for ``vllm`` the server command line, its
environment, the parallelism and why, the GPUs seen, the weights' size and whether they fit, and
the download source), checks that the backend could be created (an unknown local model, a
missing extra), renders every prompt of the run to count what it would send, and prints the first
one. No server, sandbox, request or run directory.

The cost: requests (problems x samples, and at most that many more per repair round), prompt
tokens (counted with the model's own tokenizer where ``transformers`` and the tokenizer files are
on this machine, else estimated at :data:`CHARS_PER_TOKEN` characters a token, and said to be an
estimate), the completion-token ceiling (requests x ``max_tokens``), and, with ``--price
IN/OUT`` (US dollars per million prompt / completion tokens), the price of the prompts and the
ceiling of the completions.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from trex_eval.cli._common import err, out
from trex_eval.errors import ConfigError, TrexError
from trex_eval.records import Prompt
from trex_eval.run.spec import RunSpec

CHARS_PER_TOKEN = 4.0
"""Characters per token assumed when no tokenizer is at hand (English prose and Python code run
at 3.5-4.5 with the common BPE vocabularies)."""


@dataclasses.dataclass(frozen=True)
class Price:
    """US dollars per million prompt (``input``) and completion (``output``) tokens."""

    input: float
    output: float

    @classmethod
    def parse(cls, text: str) -> Price:
        """``"IN/OUT"`` (e.g. ``0.27/1.10``).

        Raises:
            ConfigError: not two non-negative numbers separated by ``/``.
        """
        parts = text.split("/")
        try:
            values = [float(part) for part in parts]
        except ValueError:
            values = []
        if len(values) != 2 or min(values) < 0:
            raise ConfigError(
                f"--price {text!r} is not IN/OUT",
                hint="US dollars per million prompt and completion tokens, e.g. --price 0.27/1.10",
            )
        return cls(values[0], values[1])


def print_dry_run(spec: RunSpec, *, data_dir: Path | None, price: Price | None = None) -> bool:
    """Print the plan of ``spec`` (see the module docstring); whether the run could start here
    (``False`` after printing each reason it could not)."""
    from trex_eval.backends.base import create_backend, dry_run
    from trex_eval.run.pipeline import prepare_benchmarks

    model = spec.model
    facts = dict(dry_run(model))
    problems = [str(facts.pop("problem"))] if facts.get("problem") else []
    facts.pop("problem", None)
    _print_facts(spec, facts)
    try:
        create_backend(model)
    except TrexError as error:
        problems.append(str(error))
    prepared = prepare_benchmarks(spec, data_dir=data_dir)
    prompts = [
        item.renderer.render(problem, few_shot=item.shots.get(problem.id, ()))
        for item in prepared
        for problem in item.problems
    ]
    _line("benchmarks", ", ".join(f"{item.bench.name} ({len(item.problems)} problems)" for item in prepared))
    _print_cost(spec, prompts, price=price)
    first = prompts[0]
    _line("first prompt", f"{prepared[0].bench.name} / {first.problem_id} (prompt set {first.prompt_set})")
    for message in first.messages:
        out.print(f"--- {message.role} ---", highlight=False, markup=False)
        out.print(message.content, highlight=False, markup=False, soft_wrap=True)
    for problem in problems:
        err.print(f"[bold red]cannot start:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    out.print("dry run: nothing was started", highlight=False, markup=False)
    return not problems


def _print_facts(spec: RunSpec, facts: dict[str, object]) -> None:
    model = spec.model
    _line("model", f"{model.name} (backend {model.backend}, model {model.model or '-'})")
    argv = facts.pop("argv", None)
    if isinstance(argv, list) and argv:
        _line("server command", shlex.join(str(a) for a in argv))
    for key in ("environment", "download", "parallelism", "gpus", "weights_gib", "weights_from"):
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


def _print_cost(spec: RunSpec, prompts: list[Prompt], *, price: Price | None) -> None:
    count, how = _token_counter(spec)
    samples = spec.samples
    requests = len(prompts) * samples
    prompt_tokens = sum(count(_text(prompt)) for prompt in prompts) * samples
    ceiling = requests * spec.model.sampling.max_tokens
    repair = spec.repair.rounds
    _line(
        "requests",
        f"{requests:,} ({len(prompts):,} problems x {samples} sample(s))"
        + (
            f"; repair adds at most {repair} x {requests:,} more, each with the conversation so far"
            if repair
            else ""
        ),
    )
    _line("prompt tokens", f"{prompt_tokens:,} ({how})")
    _line(
        "completion tokens",
        f"at most {ceiling:,} ({requests:,} requests x max_tokens {spec.model.sampling.max_tokens})",
    )
    if price is not None:
        prompt_cost = prompt_tokens / 1e6 * price.input
        completion_cost = ceiling / 1e6 * price.output
        _line(
            "price",
            f"${prompt_cost:,.2f} of prompts + at most ${completion_cost:,.2f} of completions "
            f"(at ${price.input:g} / ${price.output:g} per million tokens)",
        )
    else:
        _line("price", "give --price IN/OUT (US dollars per million prompt / completion tokens)")


def _text(prompt: Prompt) -> str:
    return "\n".join(message.content for message in prompt.messages)


def _token_counter(spec: RunSpec) -> tuple[Callable[[str], int], str]:
    """A token counter for ``spec``'s model and how it counts: the model's tokenizer where it is
    on this machine (``transformers``, local files only), else :data:`CHARS_PER_TOKEN`."""
    model = spec.model.model
    if spec.model.backend in ("vllm", "sglang") and model:
        try:
            from transformers import AutoTokenizer  # type: ignore[import-not-found]

            tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
        except Exception:  # not installed, not cached, or no tokenizer files: estimate instead
            pass
        else:
            return (lambda text: len(tokenizer.encode(text))), f"counted with {model}'s tokenizer"
    return (
        lambda text: round(len(text) / CHARS_PER_TOKEN),
        f"an estimate at {CHARS_PER_TOKEN:g} characters a token; no tokenizer of the model here",
    )


def _line(label: str, value: str) -> None:
    out.print(f"[bold]{escape(label)}:[/bold] {escape(value)}", highlight=False, soft_wrap=True)
