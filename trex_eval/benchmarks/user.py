"""User benchmarks: check a benchmark YAML end to end, and register it under a name.

A user benchmark is a YAML file (schema: ``docs/byo-benchmark.md``) next to its data. Checking
it (:func:`validate`) goes as far as a run would before calling a model: the spec, every row,
the grading rules of both protocols and the prompt of the first problem. Registering it
(:func:`register`) writes a copy into :func:`~trex_eval.benchmarks.user_benchmarks_dir`, where
``trex-eval run -b NAME`` finds it.

The registered copy is the user's YAML with two changes: ``name`` is the registered name, and a
``source.path`` relative to the YAML's folder (``source.root: file``) becomes absolute, so that
the copy reads the same rows from its new place. Instance and reference paths stay relative to
the source file's folder, which does not move. Editing the original YAML afterwards does not
change the registered copy: register again with ``replace=True``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trex_eval.benchmarks import (
    Benchmark,
    BenchmarkSpec,
    GraderSpec,
    RowError,
    load_benchmark,
    resolve_spec_path,
    shipped_spec_paths,
    user_benchmarks_dir,
    user_spec_paths,
)
from trex_eval.benchmarks.loading import spec_location
from trex_eval.errors import BenchmarkError, ConfigError
from trex_eval.prompting.render import UPSTREAM_SET, PromptRenderer
from trex_eval.records import Prompt
from trex_eval.store import atomic_write_text

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`validate` found in a benchmark that can run.

    ``prompts`` holds the first problem rendered with each prompt set a run uses by default (the
    benchmark's ``default_set``, and ``t-rex`` when the YAML names upstream templates); ``rules``
    maps each protocol to the canonical rule it grades with (empty when :func:`validate` was not
    given a resolver). ``notes`` are warnings about the benchmark as a whole (e.g. a row count
    different from ``source.rows``).
    """

    benchmark: Benchmark
    source: Path
    rules: Mapping[str, str]
    prompts: tuple[Prompt, ...]
    notes: tuple[str, ...] = ()

    @property
    def row_errors(self) -> tuple[RowError, ...]:
        return self.benchmark.row_errors

    @property
    def rows_read(self) -> int:
        """Rows in the source, usable or not (every row error stands for one row)."""
        return len(self.benchmark.problems) + len(self.benchmark.row_errors)


RuleResolver = Callable[[GraderSpec], Mapping[str, str]]
"""Protocol name -> canonical rule of a grader block; raises ConfigError for a bad rule
(:func:`trex_eval.protocols.plan.rules_by_protocol`, passed in by the layers above)."""


def validate(
    name_or_path: str, *, data_dir: Path | None, rules: RuleResolver | None = None
) -> ValidationReport:
    """Load a benchmark leniently and check everything a run needs before calling a model.

    Bad rows are skipped and listed (``ValidationReport.row_errors``), never fatal on their own.

    Args:
        name_or_path: a benchmark YAML path, or the name of a shipped or registered benchmark.
        data_dir: the benchmark data directory; only specs with ``source.root: data`` or
            upstream (``t-rex``) templates need it. ``None`` skips the ``t-rex`` prompt check.
        rules: resolves the rules the benchmark is graded by (``None``: not checked).

    Raises:
        BenchmarkError: invalid YAML or schema, missing source data, no usable row, or a prompt
            that cannot be rendered.
        ConfigError: an unknown grading rule (with ``rules``) or prompt set.
    """
    spec_path = resolve_spec_path(name_or_path)
    bench = load_benchmark(str(spec_path), data_dir=data_dir, strict=False)
    spec = bench.spec
    source = _source_path(spec, spec_path=spec_path, data_dir=data_dir)
    if not bench.problems:
        first = f"; first problem: {bench.row_errors[0]}" if bench.row_errors else ""
        raise BenchmarkError(
            f"no usable row in {source} ({len(bench.row_errors)} rows with problems{first})",
            where=str(spec_path),
            hint="check the field names under `fields:` against the data file",
        )
    resolved = _located_rules(rules, spec.grader, spec_path) if rules is not None else {}
    sets = [spec.prompt.default_set]
    if spec.prompt.upstream is not None and data_dir is not None:
        sets.insert(0, UPSTREAM_SET)
    first_problem = bench.problems[0]
    prompts = tuple(PromptRenderer(bench, name).render(first_problem) for name in sets)
    notes = []
    if spec.source.rows is not None and spec.source.rows != len(bench.problems):
        notes.append(f"source.rows says {spec.source.rows} rows, {len(bench.problems)} are usable")
    if spec.name in shipped_spec_paths() and spec_path.resolve() != shipped_spec_paths()[spec.name].resolve():
        notes.append(f"'{spec.name}' is also a shipped benchmark's name: results would not tell them apart")
    return ValidationReport(bench, source, resolved, prompts, tuple(notes))


def _located_rules(rules: RuleResolver, grader: GraderSpec, spec_path: Path) -> Mapping[str, str]:
    """``rules(grader)``, a bad rule's error located at the key of the file that names it.

    Raises:
        ConfigError: as ``rules`` does, with ``where`` the file, line and key (``grader.rule`` or
            ``grader.compat_rule``).
    """
    try:
        return rules(grader)
    except ConfigError as exc:
        key = "rule"
        if grader.compat_rule is not None:
            # Whether the block still fails without its compat_rule tells which key is bad.
            try:
                rules(grader.model_copy(update={"compat_rule": None}))
                key = "compat_rule"
            except ConfigError:
                pass
        where = f"{spec_location(spec_path, ('grader', key))}: grader.{key}"
        raise ConfigError(exc.message, where=where, hint=exc.hint) from None


def _source_path(spec: BenchmarkSpec, *, spec_path: Path, data_dir: Path | None) -> Path:
    base = data_dir if spec.source.root == "data" and data_dir is not None else spec_path.parent
    return (base / spec.source.path).resolve()


@dataclass(frozen=True)
class Registration:
    """A registered benchmark: its ``name``, the copy at ``path``, the YAML it came from
    (``origin``), what was changed in the copy (``changes``) and whether it replaced an earlier
    registration of that name."""

    name: str
    path: Path
    origin: Path
    changes: tuple[str, ...]
    replaced: bool


def register(report: ValidationReport, *, name: str | None = None, replace: bool = False) -> Registration:
    """Register a validated benchmark in the user benchmarks directory.

    Args:
        report: the result of :func:`validate` on the YAML to register.
        name: the name to register under; default the YAML's ``name``.
        replace: overwrite an earlier registration of the same name instead of refusing.

    Raises:
        BenchmarkError: a name that is not a plain file name, that of a shipped benchmark, or
            already registered (without ``replace``); a benchmark that is itself shipped.
    """
    origin = report.benchmark.spec_path.resolve()
    shipped = shipped_spec_paths()
    if origin in {path.resolve() for path in shipped.values()}:
        raise BenchmarkError(f"'{report.benchmark.name}' is a shipped benchmark; it needs no registering")
    chosen = name or report.benchmark.spec.name
    if not _NAME.match(chosen):
        raise BenchmarkError(
            f"'{chosen}' cannot be a benchmark name",
            hint="use letters, digits, '.', '_' and '-', starting with a letter or digit (--name NAME)",
        )
    if chosen in shipped:
        raise BenchmarkError(
            f"'{chosen}' is the name of a shipped benchmark",
            hint="register under another name with --name NAME",
        )
    existing = user_spec_paths().get(chosen)
    if existing is not None and not replace:
        raise BenchmarkError(
            f"a benchmark named '{chosen}' is already registered",
            where=str(existing),
            hint="pass --replace to register this file in its place, or choose --name NAME",
        )
    raw, changes = _registered_mapping(origin, name=chosen, source=report.source)
    BenchmarkSpec.model_validate(raw)  # the edited mapping must still be a valid spec
    target = user_benchmarks_dir() / f"{chosen}.yaml"
    # No timestamp: the benchmark digest hashes this file, and registering the same YAML again
    # must not change it (a resumed run checks the digest).
    header = (
        f"# Registered by `trex-eval benchmarks add` from\n#   {origin}\n"
        + "".join(f"# {change}\n" for change in changes)
        + "# Edit the original and add it again (--replace) rather than editing this copy.\n"
    )
    _write_new_file(target, header + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=100))
    return Registration(chosen, target, origin, tuple(changes), replaced=existing is not None)


def _registered_mapping(origin: Path, *, name: str, source: Path) -> tuple[dict[str, Any], list[str]]:
    """The YAML mapping to register (the user's keys, in the user's order) and its changes."""
    raw = yaml.safe_load(origin.read_text(encoding="utf-8"))
    changes = []
    if raw.get("name") != name:
        changes.append(f"name: {raw.get('name')} -> {name}")
        raw["name"] = name
    section = raw["source"]
    if section.get("root", "file") == "file" and not Path(section["path"]).is_absolute():
        changes.append(f"source.path: {section['path']} -> {source}")
        section["path"] = str(source)
    return raw, changes


def _write_new_file(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)


def unregister(name: str) -> Path:
    """Remove the registration ``name`` (the data it points at are untouched); returns the
    removed file.

    Raises:
        BenchmarkError: no benchmark of that name is registered.
    """
    registered = user_spec_paths()
    path = registered.get(name)
    if path is None:
        known = ", ".join(sorted(registered)) or "none"
        raise BenchmarkError(f"no registered benchmark named '{name}'", hint=f"registered: {known}")
    path.unlink()
    return path
