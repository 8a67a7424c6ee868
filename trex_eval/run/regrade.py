"""Grading stored completions again: a run directory under other rules or another protocol, or a
JSONL of completions recorded by another tool. Both become ``replay`` runs (generate once, grade
many).

* **Executions are reused.** Re-grading a run directory under another rule takes each program's
  stored execution instead of running it again (the sandbox pool does not even start); only what
  changes the program or its job (protocol, extractor, limits, gurobipy policy, data) runs the
  programs again, and a note says which benchmarks and why.
* **Several rules, one pass.** Two rules of the same kind (``--rule orlm --rule strict``) grade
  into one directory holding one run directory per rule (``OUT/orlm@3/``, ``OUT/strict@3/``) and
  a ``leaderboard.md`` with a column per rule; programs run at most once for all of them.
* **Honest counts for foreign files.** A completions file is graded on the problems it holds
  (``--all-problems``: every problem of the benchmark, those without a completion graded
  ``missing``); :attr:`Regrade.notes` says how many problems were left out and which records
  were unknown, repeated or extra.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import secrets
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.replay import ReplayIndex, ReplayKey, ReplayOptions, load_index
from trex_eval.benchmarks import Benchmark, load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.grading import get_rule
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.records import GraderKind, SamplingParams
from trex_eval.run import pipeline
from trex_eval.run.preflight import missing_library_notes
from trex_eval.run.spec import RunOptions, RunSpec, superseded_rule
from trex_eval.sandbox import SandboxLimits
from trex_eval.store import COMPLETIONS, MANIFEST, REWARD_LOG_BACKEND, RunSettings, RunStore

LEADERBOARD_MD = "leaderboard.md"
"""The table of every rule's pass, written into the directory of a several-rule re-grade."""


@dataclass(frozen=True)
class CompletionFields:
    """How to read a foreign completions file: its benchmark and field names. ``code_field`` names a
    field holding an already-extracted program (graded with the ``raw`` extractor). ``samples`` is
    the number of completions per problem in the file (records of one id are samples 0, 1, ... in
    file order). ``all_problems`` grades every problem of the benchmark (the denominator stays
    the benchmark's size; problems without a completion are ``missing``), instead of the ids
    present in the file."""

    benchmark: str | None = None
    id_field: str = "problem_id"
    text_field: str = "completion"
    code_field: str | None = None
    prompt_set: str = "t-rex"
    samples: int = 1
    all_problems: bool = False
    allow_torn: bool = False
    """Grade a file whose last line is cut off without it (its problem counts as missing, where
    its id can be read) instead of refusing the file."""


@dataclass(frozen=True)
class Regrade:
    """What ``trex-eval grade`` runs: one pass per rule combination, in order. ``root`` is the run
    directory (one pass) or the directory holding one run directory per pass; ``notes`` are the
    warnings to print before it starts."""

    passes: tuple[tuple[RunSpec, RunOptions], ...]
    root: Path | None
    notes: tuple[str, ...] = ()
    protocol_line: str | None = None
    """For a run directory: the protocol it is re-graded under and why (the run's own, or the
    one ``--protocol`` named instead), one line for the user to see before it starts."""

    @property
    def several(self) -> bool:
        return len(self.passes) > 1


def plan_regrade(
    source: Path,
    *,
    data_dir: Path | None,
    rules: tuple[str, ...],
    protocol: str | None,
    fields: CompletionFields,
    workers: int = 2,
    limits: SandboxLimits | None = None,
    out: Path | None = None,
    command: tuple[str, ...] = (),
    show_progress: bool = True,
    diagnose: bool = True,
) -> Regrade:
    """The re-grade of ``source`` (a run directory or a completions JSONL) under ``rules``;
    ``limits`` replaces the sandbox limits (the programs then run again). Written to ``out``, by
    default ``results/<run directory or file name>-regrade-<time>`` (``-grade-`` for a file), so
    a re-grade is never mistaken for the run it re-graded. ``diagnose`` stores why each failing
    sample failed (from the stored executions' captured models: nothing runs again for it).
    ``protocol`` ``None`` keeps a run directory's own protocol (a completions file: the default
    protocol); :attr:`Regrade.protocol_line` says which one a run directory is re-graded under.

    Raises:
        ConfigError: ``source`` is neither; a completions file comes without ``--benchmark``, or
            none of its ids is a problem of the benchmark; an unknown rule; a run re-graded under
            its own rules (no ``rules``, same protocol) recorded a rule version this trex-eval no
            longer implements.
    """
    is_run = (source / MANIFEST).is_file()
    root = out or _default_out(source, is_run=is_run)
    if is_run:
        graded = _graded_run(source, protocol=protocol, rules=rules, limits=limits)
    else:
        graded = _graded_file(source, data_dir=data_dir, protocol=protocol, fields=fields, limits=limits)
    options = RunOptions(
        data_dir=data_dir,
        out=root,
        workers=workers,
        command=command,
        show_progress=show_progress,
        diagnose=diagnose,
        reuse_executions=graded.reuse_executions,
    )
    return Regrade(
        _passes(graded, rules=rules, options=options, root=root), root, graded.notes, graded.protocol_line
    )


@dataclass(frozen=True)
class _Graded:
    """What a re-grade grades, whatever its source: the spec of each rule combination
    (``spec_for``), the notes to print, the protocol line (run directories only) and the run
    directory whose stored executions are reused (``None``: the programs run)."""

    spec_for: Callable[[tuple[str, ...]], RunSpec]
    notes: tuple[str, ...] = ()
    protocol_line: str | None = None
    reuse_executions: Path | None = None


def _default_out(source: Path, *, is_run: bool) -> Path:
    """``results/<run directory>-regrade-<time>`` or ``results/<file stem>-grade-<time>``, with
    random digits so that two re-grades in one second do not share a directory."""
    stamp = f"{dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    name = _slug(source.name if is_run else source.stem)
    return Path("results") / f"{name}-{'re' if is_run else ''}grade-{stamp}"


def _graded_run(
    source: Path, *, protocol: str | None, rules: tuple[str, ...], limits: SandboxLimits | None
) -> _Graded:
    """A run directory's re-grade: its own settings replayed, its stored executions reused.

    Raises:
        ConfigError: ``source`` is a reward log; it is re-graded under its own rules and recorded
            a rule version this trex-eval no longer implements.
    """
    settings = RunStore(source).read_manifest().settings
    if settings.model.backend == REWARD_LOG_BACKEND:
        raise ConfigError(
            f"{source} is a reward log (`trex-eval serve --out`): its prompts are the trainer's, "
            "which grading again cannot render",
            hint="read it with leaderboard, compare or report; for a diagnosis of each failing "
            "rollout, serve with --diagnose",
        )
    chosen = protocol or settings.protocol
    if not rules and chosen == settings.protocol:
        _check_recorded_rules(source, settings)
    model = _replay_of_run(source, settings)
    texts = (line.completion.text for line in RunStore(source).iter_completions() if line.completion.text)

    def spec_for(combo: tuple[str, ...]) -> RunSpec:
        spec = RunSpec.from_settings(settings, model=model, protocol=chosen, rules=combo)
        return spec if limits is None else replace(spec, limits=limits)

    return _Graded(
        spec_for=spec_for,
        notes=tuple(missing_library_notes((), texts)),
        protocol_line=_protocol_line(protocol, settings.protocol),
        reuse_executions=source,
    )


def _graded_file(
    source: Path,
    *,
    data_dir: Path | None,
    protocol: str | None,
    fields: CompletionFields,
    limits: SandboxLimits | None,
) -> _Graded:
    """A completions file's grade under ``protocol`` (``None``: the default protocol); its
    programs run (:func:`_completions_spec` raises what it refuses)."""
    base, notes = _completions_spec(
        source, data_dir=data_dir, protocol=protocol or DEFAULT_PROTOCOL, fields=fields
    )
    base = base if limits is None else replace(base, limits=limits)
    return _Graded(spec_for=lambda combo: replace(base, rules=combo), notes=notes)


def _passes(
    graded: _Graded, *, rules: tuple[str, ...], options: RunOptions, root: Path
) -> tuple[tuple[RunSpec, RunOptions], ...]:
    """One pass per rule combination (:func:`_rule_combinations`); with several, each writes to
    ``root/<rule specs>`` and reuses executions: a re-graded run's serve every pass, a completions
    file's programs run in the first pass, whose executions the others grade.

    Raises:
        ConfigError: an unknown rule.
    """
    combos = _rule_combinations(rules) or [()]
    if len(combos) == 1:
        return ((graded.spec_for(combos[0]), options),)
    passes: list[tuple[RunSpec, RunOptions]] = []
    for combo in combos:
        reuse = options.reuse_executions or (passes[0][1].out if passes else None)
        name = _slug("+".join(get_rule(rule).spec for rule in combo))
        passes.append((graded.spec_for(combo), replace(options, out=root / name, reuse_executions=reuse)))
    return tuple(passes)


def _protocol_line(asked: str | None, recorded: str) -> str:
    """The one line that says under which protocol a run directory is re-graded, and why."""
    if asked is None:
        return f"re-grading under protocol {recorded} (the run's own)"
    if asked == recorded:
        return f"re-grading under protocol {recorded} (the run's own; --protocol names it too)"
    return f"re-grading under protocol {asked} (the run used {recorded}; --protocol given)"


def run_regrade(regrade: Regrade) -> list[pipeline.RunResult]:
    """Run every pass in order; with several, also write ``root/leaderboard.md`` (one column per
    rule)."""
    results = [pipeline.run(spec, options) for spec, options in regrade.passes]
    if regrade.several and regrade.root is not None:
        from trex_eval.report import build_leaderboard, render_leaderboard_markdown

        board = build_leaderboard([result.summary for result in results])
        (regrade.root / LEADERBOARD_MD).write_text(render_leaderboard_markdown(board), encoding="utf-8")
    return results


def _check_recorded_rules(source: Path, settings: RunSettings) -> None:
    """A re-grade under the run's own rules needs each of them at its implemented version.

    Raises:
        ConfigError: a benchmark was graded under a rule version this trex-eval no longer
            implements; the hint names the rule as it is now.
    """
    old = superseded_rule(settings)
    if old is not None:
        raise ConfigError(
            f"{source} graded {old.benchmark} under {old.recorded}, which this trex-eval no longer "
            f"implements ({old.current} decides differently)",
            hint=f"name the rule to re-grade under: --rule {old.current}",
        )


def _replay_of_run(source: Path, settings: RunSettings) -> BackendSpec:
    """The ``replay`` model that serves a run directory's stored completions."""
    return BackendSpec(
        name=settings.model.name,
        backend="replay",
        model=settings.model.model,
        options={
            "path": str(source / COMPLETIONS),
            "id_field": "completion.problem_id",
            "sample_field": "completion.sample_index",
            "benchmark_field": "benchmark",
            "text_field": "completion",
            # The run's own file: a crash may have cut its last line (that sample is missing).
            "allow_torn": True,
        },
        sampling=settings.sampling,
        description=f"re-grade of {source}",
    )


def _completions_spec(
    source: Path, *, data_dir: Path | None, protocol: str, fields: CompletionFields
) -> tuple[RunSpec, tuple[str, ...]]:
    """The spec that grades the completions file ``source`` under ``protocol`` on the problems it
    holds (``fields.all_problems``: on every problem of the benchmark), and the notes on what of
    the file is left out, repeated or unknown.

    Raises:
        ConfigError: ``source`` is not a file; no ``--benchmark``; ``--samples`` below 1; the file
            cannot be read, holds no record or none of its ids is a problem of the benchmark.
    """
    benchmark = _benchmark_named(source, fields)
    index = load_index(
        source,
        ReplayOptions(
            path=str(source),
            id_field=fields.id_field,
            text_field=fields.code_field or fields.text_field,
            allow_torn=fields.allow_torn,
        ),
    )
    selection = _select_problems(source, index, load_benchmark(benchmark, data_dir=data_dir))
    notes = _coverage_notes(source, selection, all_problems=fields.all_problems)
    notes += _record_notes(source, index, selection, samples=fields.samples)
    spec = _file_run_spec(source, benchmark, fields=fields, protocol=protocol, selected=selection.selected)
    return spec, tuple(notes)


def _benchmark_named(source: Path, fields: CompletionFields) -> str:
    """The benchmark a completions file is graded on, once what no file can be graded with is
    refused.

    Raises:
        ConfigError: ``source`` is not a file, no benchmark is named, ``samples`` is below 1.
    """
    if not source.is_file():
        raise ConfigError(f"{source} is neither a run directory nor a completions file")
    if fields.benchmark is None:
        raise ConfigError(
            "grading a completions file needs --benchmark NAME",
            hint="also give --id-field and --text-field (or --code-field) if they differ from the defaults",
        )
    if fields.samples < 1:
        raise ConfigError("--samples must be at least 1")
    return fields.benchmark


@dataclass(frozen=True)
class _Selection:
    """Which problems of ``benchmark`` a completions file is graded on. ``ids`` are the
    benchmark's problems in order, ``selected`` those the file holds (a torn last line's problem
    included: cutting a wrong answer off must not raise the score), ``unknown`` the file's ids
    that are no problem of it, ``scoped`` the file's keys for it,
    ``other_benchmarks`` the number of records for other benchmarks and ``skipped_torn_line``
    whether the file's cut-off last line was skipped."""

    benchmark: str
    ids: tuple[str, ...]
    selected: tuple[str, ...]
    unknown: tuple[str, ...]
    torn: str | None
    scoped: tuple[ReplayKey, ...]
    other_benchmarks: int
    skipped_torn_line: bool


def _select_problems(source: Path, index: ReplayIndex, bench: Benchmark) -> _Selection:
    """The problems of ``bench`` that ``index`` (read from ``source``) is graded on.

    Raises:
        ConfigError: the file holds no completion record, or none of its ids is a problem of
            ``bench``.
    """
    ids = tuple(problem.id for problem in bench.problems)
    known = set(ids)
    scoped = tuple(key for key in index.completions if key[0] in (None, bench.name))
    present = frozenset(problem_id for _, problem_id, _ in scoped)
    torn = index.torn_problem_id if index.torn_problem_id in known else None
    selected = tuple(problem_id for problem_id in ids if problem_id in present or problem_id == torn)
    other_benchmarks = len(index.completions) - len(scoped)
    if not index.completions and not index.skipped_torn_line:
        raise ConfigError(
            f"{source} holds no completion records (it is empty or holds only blank lines)",
            hint="grade the file your generation step wrote; one JSON object per line",
        )
    if not selected:
        raise ConfigError(
            f"none of the {len(present)} ids in {source} is a problem of benchmark '{bench.name}' "
            f"(the file has {_examples(sorted(present))}"
            + (f" for it, {other_benchmarks} record(s) of other benchmarks" if other_benchmarks else "")
            + f"; the benchmark has {_examples(ids)})",
            hint="name the id field with --id-field, or choose the benchmark the completions are for",
        )
    return _Selection(
        benchmark=bench.name,
        ids=ids,
        selected=selected,
        unknown=tuple(sorted(present - known)),
        torn=torn,
        scoped=scoped,
        other_benchmarks=other_benchmarks,
        skipped_torn_line=index.skipped_torn_line,
    )


def _coverage_notes(source: Path, selection: _Selection, *, all_problems: bool) -> list[str]:
    """Notes on the problems a completions file leaves out and the ids it holds for no problem."""
    notes = []
    name, bench, total = source.name, selection.benchmark, len(selection.ids)
    left_out = total - len(selection.selected)
    if left_out and not all_problems:
        notes.append(
            f"grading the {len(selection.selected)} of {total} problems of {bench} that {name} holds: "
            f"{left_out} problems are left out of the denominator (--all-problems grades them all, the "
            "ones without a completion as missing, marked ‡)"
        )
    elif left_out:
        notes.append(
            f"{left_out} of {total} problems of {bench} have no completion in {name}: "
            "graded as missing (‡), counted as failures"
        )
    if selection.unknown:
        notes.append(
            f"{len(selection.unknown)} id(s) in {name} are not problems of {bench}, ignored: "
            f"{_examples(selection.unknown)}"
        )
    if selection.other_benchmarks:
        notes.append(f"{selection.other_benchmarks} record(s) in {name} are for other benchmarks, ignored")
    return notes


def _record_notes(source: Path, index: ReplayIndex, selection: _Selection, *, samples: int) -> list[str]:
    """Notes on records beyond ``samples`` per problem, libraries the sandbox lacks and records
    that repeat a (problem, sample)."""
    notes = []
    name = source.name
    if index.skipped_torn_line:  # what skipping it costs (nothing, where earlier lines hold its samples)
        cost = index.torn_line_cost(selection.benchmark, samples=samples, problems=selection.ids)
        notes.append(f"the last line of {name} is cut off and was skipped ({cost})")
    extra = Counter(problem_id for _, problem_id, sample in selection.scoped if sample >= samples)
    if extra and index.fields.sample is None:
        notes.append(
            f"{len(extra)} id(s) occur more than {samples} time(s) in {name}, e.g. "
            f"{_examples(sorted(extra))}: records of an id are samples 0, 1, ... in file order, so only "
            f"the first {samples} are graded (give --samples N if the file holds N per problem)"
        )
    elif extra:
        notes.append(
            f"{sum(extra.values())} record(s) in {name} have a sample index ≥ --samples {samples}, ignored"
        )
    notes += missing_library_notes((), (completion.text for completion in index.completions.values()))
    repeated = index.records - len(index.completions)
    if repeated:
        notes.append(
            f"{repeated} record(s) in {name} repeat a (problem, sample) already seen: the last one is graded"
        )
    return notes


def _file_run_spec(
    source: Path, benchmark: str, *, fields: CompletionFields, protocol: str, selected: tuple[str, ...]
) -> RunSpec:
    """The ``replay`` run of a completions file on ``selected`` of ``benchmark`` (every problem
    under ``fields.all_problems``); a ``code_field`` is graded with the ``raw`` extractor."""
    model = BackendSpec(
        name=source.stem,
        backend="replay",
        model=str(source),
        options={
            "path": str(source),
            "id_field": fields.id_field,
            "text_field": fields.code_field or fields.text_field,
            "allow_torn": fields.allow_torn,
        },
        sampling=SamplingParams(),
        description=f"completions recorded in {source}",
    )
    return RunSpec(
        model=model,
        benchmarks=(benchmark,),
        prompt_set=fields.prompt_set,
        samples=fields.samples,
        protocol=protocol,
        extractor="raw" if fields.code_field else None,
        problem_ids={} if fields.all_problems else {benchmark: selected},
    )


def _rule_combinations(rules: tuple[str, ...]) -> list[tuple[str, ...]]:
    """One tuple of rule specs per pass: the product of the rules given for each kind (a kind with
    one rule, or none, does not multiply the passes)."""
    if not rules:
        return []
    by_kind: dict[GraderKind, list[str]] = {}
    seen: set[str] = set()
    for spec in rules:
        rule = get_rule(spec)
        if rule.spec not in seen:
            seen.add(rule.spec)
            by_kind.setdefault(rule.kind, []).append(spec)
    return [tuple(combo) for combo in itertools.product(*by_kind.values())]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@._+-]", "_", text)


def _examples(values: Sequence[str], *, count: int = 3) -> str:
    if not values:
        return "no ids"
    shown = ", ".join(repr(value) for value in values[:count])
    return shown + (f" and {len(values) - count} more" if len(values) > count else "")
