"""`trex-eval models | rules`: what a run can be given (model presets, grading rules, protocols)."""

from __future__ import annotations

import re
import textwrap

import typer
from rich.markup import escape

from trex_eval.cli._common import err, out
from trex_eval.cli.options import ModelsFileOption


def register(app: typer.Typer) -> None:
    app.command("models")(models)
    app.command("rules")(rules)


def models(models_file: ModelsFileOption = None) -> None:
    """List the model presets (shipped, user config dir, --models-file) and the ad-hoc spec grammar
    (vllm/<id or path>, openai/<model>, openai-compatible/<model>, local/<key>).

    The format of a presets file, and how a user file overrides the shipped presets, is
    described at the top of the shipped file (its path is printed after the list).
    """
    from trex_eval.backends.presets import load_presets, shipped_presets_file, user_presets_file

    # A list, not a table: preset names are what users type, and a table on a narrow terminal
    # wraps or cuts them.
    for name, spec in sorted(load_presets(user_file=models_file).items()):
        s = spec.sampling
        out.print(f"[bold]{escape(name)}[/bold]  {spec.backend}  {escape(spec.model or '-')}", soft_wrap=True)
        lines = [f"T={s.temperature} top_p={s.top_p} max_tokens={s.max_tokens} seed={s.seed}"]
        lines += textwrap.wrap(_first_sentence(spec.description), width=max(40, out.width - 4))
        for line in lines:
            out.print("    " + escape(line), highlight=False)
        out.print()
    from trex_eval.backends.specs import GRAMMAR

    out.print(GRAMMAR, highlight=False, markup=False, soft_wrap=True)
    out.print()
    user_file = user_presets_file()
    err.print(
        f"format and override rules: the header of {shipped_presets_file()}; your presets: "
        f"{user_file}{'' if user_file.is_file() else ' (not created yet)'} or --models-file"
    )


def rules() -> None:
    """List the grading rules and protocols: what `--rule` and `--protocol` accept.

    Every grade records its rule as name@version; a spec may add parameters
    (`strict:rtol=1e-6`, `rel:1e-4`, `round:2`).
    """
    from trex_eval.grading import families, get_rule
    from trex_eval.protocols import get_protocol, protocol_names
    from trex_eval.protocols.conventions import OPTIONS

    for entry in families():
        rule = get_rule(entry.name + {"rel": ":1e-4", "abs": ":1e-6", "round": ":2"}.get(entry.name, ""))
        out.print(f"[bold]{escape(entry.name)}[/bold]@{rule.version}  {entry.kind.value}", soft_wrap=True)
        for line in textwrap.wrap(entry.summary, width=max(40, out.width - 4)):
            out.print("    " + escape(line), highlight=False)
    out.print()
    for name in protocol_names():
        out.print(
            f"[bold]--protocol {escape(name)}[/bold]  {escape(get_protocol(name).description)}",
            soft_wrap=True,
        )
    out.print()
    grammar = "--protocol BASE+OPTION[@VERSION][=VALUE]... (docs/protocols.md)"
    out.print(f"Execution conventions, never defaults: {escape(grammar)}", soft_wrap=True)
    for option in OPTIONS.entries():
        out.print(f"  [bold]+{escape(option.spec)}[/bold]  {escape(option.summary)}", soft_wrap=True)


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)\.\s+(?=[A-Z(`])")
"""A full stop ending a sentence: followed by a capital, never the one of "e.g." or "i.e."."""


def _first_sentence(text: str) -> str:
    end = _SENTENCE_END.search(text)
    return text[: end.start() + 1] if end else text
