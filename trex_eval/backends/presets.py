"""Model presets: named :class:`~trex_eval.backends.base.BackendSpec` s read from YAML files.

Sources, read in this order (later ones win):

1. ``trex_eval/models.yaml``, shipped with the package;
2. ``<config dir>/models.yaml`` when it exists (``TREX_CONFIG_DIR``, default the platform's user
   config folder, see :func:`trex_eval.config.config_dir`);
3. the file given with ``--models-file`` (``user_file``), which must exist.

Merge rule: a preset whose name appears in a later file **replaces** the earlier preset as a
whole; fields are not merged, so a user copies the entry they change. New names are added.

A file is a YAML mapping from preset name to an entry with the fields of :class:`PresetEntry`.
Every error names the file, the line and the field (:class:`~trex_eval.errors.ConfigError`).
``chat_template_kwargs`` and ``extra_body`` are mappings in YAML; since backend options are
scalars, they reach the backend folded into the single JSON option ``extra_body``, which the
OpenAI-compatible client merges into every request body (and so do ``vllm`` and ``local``, which
delegate their HTTP to it).

:func:`resolve_preset` turns ``--model NAME`` plus command-line overrides into the spec to run.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from trex_eval import config
from trex_eval.backends import specs
from trex_eval.backends.base import BackendSpec, backend_names
from trex_eval.benchmarks import assets
from trex_eval.errors import ConfigError
from trex_eval.records import SamplingParams

OptionValue = str | int | float | bool | None

MODELS_FILE_NAME = "models.yaml"
SAMPLING_OVERRIDES = frozenset({"temperature", "top_p", "max_tokens", "seed"})
"""Override keys that set :class:`~trex_eval.records.SamplingParams` fields."""
MODEL_OVERRIDE = "model"
"""Override key that replaces ``spec.model`` (served name, checkpoint path or hub id)."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class PresetEntry(BaseModel):
    """One preset as written in a models file.

    Attributes:
        backend: registry name of the backend (``openai``, ``vllm``, ``local``, ``replay``,
            ``reference``, or one added with ``register_backend``).
        model: served model name, checkpoint path or hub id, or local model key. A value in
            angle brackets (``<path to checkpoint>``) is a placeholder: the preset is listed but
            cannot run until the model is overridden.
        description: what the preset is, for listings and the run manifest.
        options: backend options, scalar values only.
        chat_template_kwargs: sent with every request as ``chat_template_kwargs``.
        extra_body: other fields merged into every request body.
        sampling: generation parameters; omitted fields take the T-Rex defaults.
        extends: an ad-hoc model spec (``vllm/Qwen/Qwen2.5-7B-Instruct``, see
            :mod:`~trex_eval.backends.specs`) that gives ``backend``, ``model`` and default
            options; the entry's own options are laid over the spec's. With it, ``backend`` and
            ``model`` may be omitted (given, they must agree with the spec's backend / replace
            its model).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str = ""
    extends: str = ""
    model: str = ""
    description: str = ""
    options: dict[str, OptionValue] = Field(default_factory=dict)
    chat_template_kwargs: dict[str, JsonValue] = Field(default_factory=dict)
    extra_body: dict[str, JsonValue] = Field(default_factory=dict)
    sampling: SamplingParams = SamplingParams()

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value and value not in backend_names():
            raise ValueError(f"unknown backend '{value}' (known: {', '.join(backend_names())})")
        return value

    @field_validator("options")
    @classmethod
    def _no_body_option(cls, value: dict[str, OptionValue]) -> dict[str, OptionValue]:
        if "extra_body" in value:
            raise ValueError("write extra_body as a mapping beside options, not as an option")
        return value

    @field_validator("extends")
    @classmethod
    def _a_spec(cls, value: str) -> str:
        if value and not specs.is_spec(value):
            raise ValueError(f"'{value}' is not a model spec (vllm/<id>, openai/<model>, ...)")
        return value

    @model_validator(mode="after")
    def _check(self) -> PresetEntry:
        if self.chat_template_kwargs and "chat_template_kwargs" in self.extra_body:
            raise ValueError("chat_template_kwargs is given twice (also inside extra_body)")
        if not self.backend and not self.extends:
            raise ValueError("give a backend, or a model spec to extend (extends: vllm/<id>)")
        return self

    def to_spec(self, name: str) -> BackendSpec:
        """The backend spec of this entry under preset ``name``.

        Raises:
            ConfigError: ``extends`` cannot be resolved (e.g. ``openai-compatible`` without an
                endpoint), or names another backend than ``backend``.
        """
        base = (
            specs.parse_spec(self.extends, base_url=_str(self.options.get("base_url")))
            if self.extends
            else None
        )
        if base is not None and self.backend and self.backend != base.backend:
            raise ConfigError(f"preset '{name}' has backend {self.backend} but extends a {base.backend} spec")
        options = {**(base.options if base is not None else {}), **self.options}
        body = dict(self.extra_body)
        if self.chat_template_kwargs:
            body["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        if body:
            options["extra_body"] = json.dumps(body, sort_keys=True)
        return BackendSpec(
            name=name,
            backend=self.backend or (base.backend if base is not None else ""),
            model=self.model or (base.model if base is not None else ""),
            options=options,
            sampling=self.sampling,
            description=" ".join(
                (self.description or (base.description if base is not None else "")).split()
            ),
        )


def _str(value: OptionValue) -> str | None:
    return value if isinstance(value, str) and value else None


def shipped_presets_file() -> Path:
    """The ``models.yaml`` inside the package."""
    return assets.package_file(MODELS_FILE_NAME)


def user_presets_file() -> Path:
    """``<config dir>/models.yaml`` (it may not exist)."""
    return config.config_dir() / MODELS_FILE_NAME


def load_presets(*, user_file: Path | None = None) -> dict[str, BackendSpec]:
    """All presets: shipped, then the user config file if present, then ``user_file``.

    A name defined again in a later file replaces the earlier preset entirely.

    Raises:
        ConfigError: a file is unreadable or invalid (file, line and field named), or
            ``user_file`` does not exist.
    """
    files = [shipped_presets_file()]
    if user_presets_file().is_file():
        files.append(user_presets_file())
    if user_file is not None:
        if not user_file.is_file():
            raise ConfigError("models file not found", where=str(user_file))
        files.append(user_file)
    presets: dict[str, BackendSpec] = {}
    for path in files:
        presets.update(read_presets_file(path))
    return presets


def read_presets_file(path: Path) -> dict[str, BackendSpec]:
    """Presets defined in one models file, in file order.

    Raises:
        ConfigError: unreadable file, invalid YAML, a duplicate or malformed preset name, or an
            entry that fails validation; ``where`` is ``file:line``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read models file: {exc.strerror}", where=str(path)) from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", where=where) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not isinstance(root, yaml.MappingNode):
        raise ConfigError("a models file must be a mapping from preset name to preset", where=f"{path}:1")
    _reject_duplicate_keys(root, path)
    presets: dict[str, BackendSpec] = {}
    key_lines = {
        key.value: key.start_mark.line + 1 for key, _ in root.value if isinstance(key, yaml.ScalarNode)
    }
    for name, entry in raw.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"invalid preset name {name!r}: use letters, digits, '.', '_' and '-'",
                where=f"{path}:{key_lines.get(str(name), 1)}",
            )
        try:
            presets[name] = PresetEntry.model_validate(entry if entry is not None else {}).to_spec(name)
        except ConfigError as exc:
            raise ConfigError(
                f"preset '{name}': {exc.message}", where=f"{path}:{key_lines.get(name, 1)}", hint=exc.hint
            ) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = tuple(first["loc"])
            field = ".".join(str(part) for part in loc) or "(entry)"
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise ConfigError(
                f"preset '{name}', field '{field}': {first['msg']}{more}",
                where=f"{path}:{_line_of(root, (name, *loc))}",
                hint=f"fields of a preset: {', '.join(PresetEntry.model_fields)}",
            ) from None
    return presets


def resolve_preset(
    name: str,
    *,
    presets: Mapping[str, BackendSpec],
    overrides: Mapping[str, str] | None = None,
    base_url: str | None = None,
) -> BackendSpec:
    """The spec to run for ``--model NAME`` with command-line overrides applied.

    ``NAME`` is a preset or an ad-hoc model spec (``vllm/<id>``, ``openai/<model>``, ...; see
    :mod:`~trex_eval.backends.specs`); a preset of that name wins. ``base_url`` is the command
    line's ``--base-url``: it sets the endpoint of an ``openai``-backend preset or spec (like
    ``--opt base_url=``).

    Override keys: ``model`` replaces the model (served name, path or hub id);
    ``temperature``, ``top_p``, ``max_tokens`` and ``seed`` (``none`` for no seed) set sampling;
    any other key sets that backend option (``base_url``, ``concurrency``, ``path``, ...), and an
    empty value removes it so the backend default applies. Values are strings, converted by the
    backend's validation.

    Raises:
        ConfigError: unknown preset (close matches listed), an invalid sampling override, or a
            placeholder model that no override replaced.
    """
    spec = presets.get(name)
    if spec is None and specs.is_spec(name):
        spec = specs.parse_spec(name, base_url=base_url or (overrides or {}).get("base_url"))
    if spec is None:
        raise _unknown_preset(name, presets)
    overrides = dict(overrides or {})
    if base_url is not None:
        if spec.backend != "openai":
            raise ConfigError(
                f"--base-url connects to a running server; '{name}' uses backend {spec.backend}",
                hint="use --model openai-compatible/<model> --base-url URL",
            )
        overrides.setdefault("base_url", base_url)
    options = dict(spec.options)
    sampling_values: dict[str, object] = spec.sampling.model_dump()
    for key, value in overrides.items():
        if key == MODEL_OVERRIDE:
            continue
        if key in SAMPLING_OVERRIDES:
            sampling_values[key] = (
                None if key == "seed" and value.strip().lower() in ("none", "null") else value
            )
        elif value == "":
            options.pop(key, None)
        else:
            options[key] = value
    try:
        sampling = SamplingParams.model_validate(sampling_values)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0])
        raise ConfigError(
            f"invalid override {key}={overrides.get(key)!r}: {first['msg']}", where=f"model preset '{name}'"
        ) from None
    model = overrides.get(MODEL_OVERRIDE, spec.model)
    if is_placeholder(model):
        raise ConfigError(
            f"model preset '{name}' has no model yet: {model}",
            hint=f"pass --opt model=/path/to/checkpoint, or override '{name}' in {user_presets_file()}",
        )
    return BackendSpec(
        name=spec.name,
        backend=spec.backend,
        model=model,
        options=options,
        sampling=sampling,
        description=spec.description,
    )


def is_placeholder(model: str) -> bool:
    """True for a model value written as ``<what to put here>``."""
    return model.startswith("<") and model.endswith(">")


def _unknown_preset(name: str, presets: Mapping[str, BackendSpec]) -> ConfigError:
    close = difflib.get_close_matches(name, list(presets), n=3, cutoff=0.6)
    known = ", ".join(sorted(presets))
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? Known presets: {known}" if close else None
    return ConfigError(
        f"unknown model preset '{name}'",
        hint=hint
        or f"known presets: {known}; add your own in {user_presets_file()} or with --models-file; "
        "or give an ad-hoc spec: vllm/<hub id or path>, openai/<model>, openai-compatible/<model>, "
        "local/<key> (`trex-eval models` describes them)",
    )


def _walk_mappings(node: yaml.Node) -> Iterator[yaml.MappingNode]:
    if isinstance(node, yaml.MappingNode):
        yield node
        for _, value in node.value:
            yield from _walk_mappings(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _walk_mappings(item)


def _reject_duplicate_keys(root: yaml.Node, path: Path) -> None:
    # PyYAML keeps the last of two equal keys silently; a second preset with the same name in
    # one file is almost always a copy-paste slip.
    for mapping in _walk_mappings(root):
        first_line: dict[object, int] = {}
        for key, _ in mapping.value:
            value = getattr(key, "value", None)
            if not isinstance(value, str):
                continue
            line = key.start_mark.line + 1
            if value in first_line:
                raise ConfigError(
                    f"'{value}' is defined twice (first on line {first_line[value]})", where=f"{path}:{line}"
                )
            first_line[value] = line


def _line_of(root: yaml.Node, loc: Sequence[object]) -> int:
    """1-based line of the node at ``loc`` below ``root``, or of its deepest existing ancestor."""
    node = root
    line = root.start_mark.line + 1
    for step in loc:
        match: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == str(step)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            match = node.value[step]
        if match is None:
            break
        node, line = match, match.start_mark.line + 1
    return line
