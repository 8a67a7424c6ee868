"""Problem -> Prompt.

Two kinds of prompt sets:

``t-rex``
    The upstream SLAI-T-Rex templates, read from the data directory (never copied into this
    repository) and rendered exactly as the reference harness does (reference-harness.md §2):
    split once on ``SYSTEM:`` then ``USER:``, strip, then plain ``str.replace`` of each
    placeholder; the ORGEval template is one user message. Few-shot examples use the
    reference's framing (§2.3).
project sets (``neutral``, ``pulp``, ``ortools``, ``gurobipy``, ...)
    jinja2 templates in ``prompts/`` (``StrictUndefined``: a missing variable is an error, not an
    empty string), declared in ``prompts/sets.yaml``. ``neutral`` lets the model choose among the
    supported solver libraries; the others ask for one library.

A :class:`Prompt` records the sha256 of the template text(s) it came from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
from pydantic import BaseModel, ConfigDict, ValidationError

from trex_eval.benchmarks import Benchmark, assets
from trex_eval.benchmarks.loading import spec_location
from trex_eval.benchmarks.spec import UpstreamPromptSpec
from trex_eval.errors import BenchmarkError, ConfigError
from trex_eval.files import load_yaml
from trex_eval.records import ChatMessage, Problem, Prompt

UPSTREAM_SET = "t-rex"

PORTABLE_DATA_ROOT = "/trex-eval/data"
"""Stand-in for the data directory in the upstream ``{{WorkingDirectory}}`` placeholder, so that a
benchmark renders the same prompt (and prompt hash) on every machine. The program never reads it:
the prompt asks for ``data.json`` in the working directory."""


def portable_working_directory(benchmark: Benchmark) -> str:
    """The benchmark's folder under :data:`PORTABLE_DATA_ROOT`: ``/trex-eval/data/data/bench4opt_feasible``
    for B4O-Feasible, whatever the local data directory is."""
    # Resolved: a data directory reached through a symlink (../shared) names the same folders.
    root = Path(benchmark.root).resolve()
    data_root = None if benchmark.data_root is None else Path(benchmark.data_root).resolve()
    if data_root is not None and root.is_relative_to(data_root):
        return f"{PORTABLE_DATA_ROOT}/{root.relative_to(data_root).as_posix()}"
    return f"{PORTABLE_DATA_ROOT}/{benchmark.name}"


@dataclass(frozen=True)
class FewShotExample:
    """A solved example: its problem id, the user text it answers, and the answer shown."""

    problem_id: str
    user: str
    assistant: str


class PromptSetSpec(BaseModel):
    """One project prompt set: per task, a system and a user template; ``library`` is passed to
    the templates (``None`` = the model chooses)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str
    library: str | None = None
    templates: dict[str, tuple[str, str]]


def load_prompt_sets() -> dict[str, PromptSetSpec]:
    """The project's prompt sets from ``prompts/sets.yaml`` (not including ``t-rex``)."""
    path = assets.prompts_dir() / "sets.yaml"
    raw = load_yaml(path.read_text(encoding="utf-8"))
    try:
        return {name: PromptSetSpec.model_validate(value) for name, value in raw.items()}
    except ValidationError as exc:
        raise ConfigError(
            f"invalid prompt set definition: {exc.errors()[0]['msg']}", where=str(path)
        ) from None


def prompt_set_names() -> list[str]:
    return [UPSTREAM_SET, *sorted(load_prompt_sets())]


def _sha256(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


class PromptRenderer:
    """Renders prompts of one benchmark under one prompt set.

    Args:
        benchmark: the loaded benchmark.
        prompt_set: ``t-rex`` or a project set name.
        working_directory: value of the upstream ``{{WorkingDirectory}}`` placeholder. The reference
            harness puts the absolute path of the benchmark's data folder there, which makes prompts
            machine-dependent (the ``trex-compat`` protocol passes that path, to be byte-exact);
            default: :func:`portable_working_directory`, the same text on every machine.

    Raises:
        ConfigError: unknown prompt set.
        BenchmarkError: the benchmark has no upstream template, or a template is unreadable.
    """

    def __init__(
        self, benchmark: Benchmark, prompt_set: str, *, working_directory: str | None = None
    ) -> None:
        self.benchmark = benchmark
        self.prompt_set = prompt_set
        self.working_directory = (
            working_directory if working_directory is not None else portable_working_directory(benchmark)
        )
        if prompt_set == UPSTREAM_SET:
            self._upstream = self._read_upstream()
            self.template_sha256 = _sha256(self._upstream)
        else:
            sets = load_prompt_sets()
            if prompt_set not in sets:
                raise ConfigError(
                    f"unknown prompt set '{prompt_set}'",
                    hint=f"choose one of: {', '.join(prompt_set_names())}",
                )
            self._set = sets[prompt_set]
            task = benchmark.spec.prompt.task
            if task not in self._set.templates:
                raise ConfigError(f"prompt set '{prompt_set}' has no template for task '{task}'")
            system_name, user_name = self._set.templates[task]
            env = jinja2.Environment(
                loader=jinja2.FileSystemLoader(assets.prompts_dir()),
                undefined=jinja2.StrictUndefined,
                keep_trailing_newline=False,
                autoescape=False,
            )
            self._system = env.get_template(system_name)
            self._user = env.get_template(user_name)
            sources = [
                (assets.prompts_dir() / name).read_text(encoding="utf-8") for name in (system_name, user_name)
            ]
            self.template_sha256 = _sha256(*sources)

    # ------------------------------------------------------------------ upstream

    @property
    def _upstream_spec(self) -> UpstreamPromptSpec:
        spec = self.benchmark.spec.prompt.upstream
        if spec is None:
            raise BenchmarkError(
                f"benchmark '{self.benchmark.name}' has no upstream (t-rex) template",
                where=str(self.benchmark.spec_path),
                hint="choose a project prompt set, e.g. --prompt-set neutral",
            )
        return spec

    def _read_upstream(self) -> str:
        """The upstream template's text, from the data directory.

        Raises:
            BenchmarkError: no data directory, or the template cannot be read; the hint checks the
                data download for a shipped benchmark and names the YAML key for a user's own.
        """
        spec = self._upstream_spec
        bench = self.benchmark
        if bench.data_root is None:
            raise BenchmarkError(
                "the t-rex prompt set needs the data directory",
                where=str(bench.spec_path),
                hint="pass --data-dir or set TREX_DATA_DIR (`trex-eval data where` shows where it looks)"
                + ("" if bench.shipped else ", or choose a project prompt set, e.g. --prompt-set neutral"),
            )
        path = Path(bench.data_root) / spec.template
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            if bench.shipped:
                raise BenchmarkError(
                    f"cannot read upstream template: {exc.strerror}",
                    where=str(path),
                    hint="run `trex-eval data verify` to check the data directory "
                    "(`trex-eval data pull` fetches it)",
                ) from exc
            # A user's own benchmark: the data download does not hold its template, its YAML names it.
            key = ("prompt", "upstream", "template")
            raise BenchmarkError(
                f"cannot read upstream template {path}: {exc.strerror}",
                where=f"{spec_location(bench.spec_path, key)}: prompt.upstream.template",
                hint=f"prompt.upstream.template in {bench.spec_path.name} is relative to the data directory "
                f"({bench.data_root}): put the template at {path} or fix the path, "
                "or choose a project prompt set, e.g. --prompt-set neutral",
            ) from exc

    def _substitute(self, text: str, problem: Problem) -> str:
        values = {
            "question": problem.question,
            "data_path": problem.data_path or "",
            "working_directory": self.working_directory,
        }
        for placeholder, source in self._upstream_spec.substitutions.items():
            text = text.replace(placeholder, values[source])
        return text

    def _upstream_messages(self, problem: Problem) -> tuple[str | None, str]:
        spec = self._upstream_spec
        template = self._upstream
        if spec.style == "user-only":
            return None, self._substitute(template, problem)
        if "SYSTEM:" not in template or "USER:" not in template:
            raise BenchmarkError(
                "an upstream system-user template must contain SYSTEM: and USER:", where=spec.template
            )
        after_system = template.split("SYSTEM:", 1)[1]
        system, user = after_system.split("USER:", 1)
        return system.strip(), self._substitute(user.strip(), problem)

    # ------------------------------------------------------------------ project sets

    def _project_messages(self, problem: Problem) -> tuple[str | None, str]:
        context = {
            "question": problem.question,
            "library": self._set.library,
            "instance_file": next(iter(problem.instance_files), None),
            "data_files": len(problem.instance_links),
            "task": self.benchmark.spec.prompt.task,
        }
        system = self._system.render(context).strip()
        return (system or None), self._user.render(context).strip()

    # ------------------------------------------------------------------ public

    def render(self, problem: Problem, *, few_shot: Sequence[FewShotExample] = ()) -> Prompt:
        """The chat prompt for ``problem``, optionally preceded by few-shot examples."""
        system, user = (
            self._upstream_messages(problem)
            if self.prompt_set == UPSTREAM_SET
            else self._project_messages(problem)
        )
        messages = _with_few_shot(system, user, few_shot)
        return Prompt(
            problem_id=problem.id,
            prompt_set=self.prompt_set,
            messages=messages,
            template_sha256=self.template_sha256,
            few_shot_ids=tuple(example.problem_id for example in few_shot),
        )

    def user_text(self, problem: Problem) -> str:
        """The zero-shot user message for ``problem`` (few-shot examples quote it)."""
        return (
            self._upstream_messages(problem)
            if self.prompt_set == UPSTREAM_SET
            else self._project_messages(problem)
        )[1]


_FEW_SHOT_SYSTEM_SUFFIX = (
    "\n\nSolved examples from the same benchmark follow. Use them only for the answer format and "
    "modelling style; do not copy their data."
)


def _with_few_shot(
    system: str | None, user: str, examples: Sequence[FewShotExample]
) -> tuple[ChatMessage, ...]:
    """Compose the message list. With examples and a system message, the reference harness's chat
    framing (§2.3) is used; with a single-message prompt, its single-text framing."""
    if not examples:
        head = (ChatMessage(role="system", content=system),) if system is not None else ()
        return (*head, ChatMessage(role="user", content=user))
    if system is None:
        sections = [
            "The following solved examples show the expected answer format; they are not the current problem."
        ]
        for i, example in enumerate(examples, start=1):
            sections += [
                f"### Few-shot example {i} (not current problem)",
                "[Example prompt]",
                example.user,
                "[Example answer]",
                example.assistant,
                f"### End few-shot example {i}",
            ]
        sections += ["### Current problem", user]
        return (ChatMessage(role="user", content="\n\n".join(sections)),)
    messages = [ChatMessage(role="system", content=system + _FEW_SHOT_SYSTEM_SUFFIX)]
    for i, example in enumerate(examples, start=1):
        messages.append(
            ChatMessage(
                role="user", content=f"[Few-shot example {i}; not the current problem]\n{example.user}"
            )
        )
        messages.append(ChatMessage(role="assistant", content=example.assistant))
    messages.append(ChatMessage(role="user", content=f"[Current problem to solve]\n{user}"))
    return tuple(messages)
