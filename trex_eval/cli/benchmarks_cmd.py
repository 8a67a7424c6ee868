"""`trex-eval benchmarks ...`: list, inspect, validate, add and remove benchmarks."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from trex_eval.cli._common import data_dir_for, echo_text, err, out
from trex_eval.cli.options import DataDirOption
from trex_eval.errors import TrexError

if TYPE_CHECKING:
    from trex_eval.benchmarks import BenchmarkSpec
    from trex_eval.benchmarks.user import ValidationReport

app = typer.Typer(help="List, inspect, validate and add benchmarks.", no_args_is_help=True)

_PROMPT_PREVIEW_CHARS = 600


def _relative(text: str) -> str:
    """``text`` with the current directory prefix removed from a path it starts with."""
    return _without_prefix(text, Path.cwd()) if text.startswith(f"{Path.cwd()}/") else text


def _without_prefix(text: str, folder: Path) -> str:
    """``text`` with every occurrence of ``folder/`` removed (paths inside it become relative)."""
    return text.replace(f"{folder}/", "")


@app.command("list")
def benchmarks_list(data_dir: DataDirOption = None) -> None:
    """Every known benchmark, grouped by suite (`--benchmarks SUITE`): label version, rows, kind,
    default rule, licence and pinned source.

    A benchmark in several suites is listed under each; those in no suite but `all` come after,
    then the ones you registered.
    """
    from trex_eval import benchmarks as benchmark
    from trex_eval.benchmarks.suites import ALL_SUITE, SUITE_TITLES, suites
    from trex_eval.prompting import render as prompting
    from trex_eval.protocols import DEFAULT_PROTOCOL, protocol_names

    # The table shows the default protocol's rule; the first reproduced protocol's is a line below.
    other = next(name for name in protocol_names() if name != DEFAULT_PROTOCOL)
    root = data_dir_for([], data_dir)
    sets = prompting.prompt_set_names()
    shipped = benchmark.shipped_spec_paths()
    registered = {k: v for k, v in benchmark.user_spec_paths().items() if k not in shipped}
    rows, other_rules = _list_rows(shipped, registered, root=root, sets=sets, other=other)
    members = suites()
    grouped = {name for suite, names in members.items() if suite != ALL_SUITE for name in names}
    # The default suite first, then the others in name order.
    order = sorted((suite for suite in members if suite != ALL_SUITE), key=lambda suite: suite != "t-rex")
    groups: list[tuple[str, list[str]]] = [
        (f"-b {suite}: {SUITE_TITLES.get(suite, suite)}", [n for n in members[suite] if n in rows])
        for suite in order
    ]
    groups.append(
        (
            f"-b {ALL_SUITE} also runs these (in no other suite)",
            sorted(n for n in shipped if n not in grouped),
        )
    )
    groups.append(("registered by you (`trex-eval benchmarks add`)", list(registered)))
    with_origin = bool(registered)
    for title, names in groups:
        if names:
            out.print(Text(title, style="bold"), highlight=False)
            out.print(_list_table([rows[n] for n in names], with_origin=with_origin))
    out.print(f"sources (github.com, pinned): {', '.join(_repositories())}", highlight=False)
    if not with_origin:
        out.print("all shipped (`trex-eval benchmarks add` registers your own)", highlight=False)
    kinds = {"obj": "objective", "lp": "structure"}
    under = ", ".join(f"{kinds[kind]} {' or '.join(sorted(names))}" for kind, names in other_rules.items())
    out.print(f"with --protocol {other}: {under}", highlight=False)
    out.print("rule versions and options: `trex-eval rules`", highlight=False)
    _print_prompt_sets(rows, sets=sets)
    if root is None:
        err.print("(no data directory found: row counts are the expected ones; run `trex-eval data pull`)")


def _list_rows(
    shipped: dict[str, Path], registered: dict[str, Path], *, root: Path | None, sets: list[str], other: str
) -> tuple[dict[str, _ListRow], dict[str, set[str]]]:
    """The list's row of each benchmark (shipped, then registered; an unreadable spec's row says
    why), and the rules the ``other`` protocol grades each kind (``obj``/``lp``) with."""
    from trex_eval import benchmarks as benchmark
    from trex_eval.prompting import render as prompting
    from trex_eval.protocols import DEFAULT_PROTOCOL
    from trex_eval.protocols.plan import rules_by_protocol

    rows: dict[str, _ListRow] = {}
    other_rules: dict[str, set[str]] = {}
    for origin, paths in (("shipped", shipped), ("registered", registered)):
        for name, path in paths.items():
            try:
                spec = benchmark.load_spec(path)
                count = _row_count(name, spec, data_dir=root)
            except TrexError as exc:
                error = Text(f"unreadable: {exc.message}", style="red")
                rows[name] = _ListRow(name, "-", "-", "-", "-", "-", error, origin, "")
                continue
            rules = rules_by_protocol(spec.grader)
            other_rules.setdefault(_KIND[spec.grader.kind.value], set()).add(_unversioned(rules[other]))
            available = [s for s in sets if s != prompting.UPSTREAM_SET or spec.prompt.upstream is not None]
            rows[name] = _ListRow(
                name,
                spec.labels.version,
                count,
                _KIND[spec.grader.kind.value],
                _unversioned(rules[DEFAULT_PROTOCOL]),
                _short_licence(spec.licence),
                _source_text(spec, path, origin=origin),
                origin,
                ", ".join(available),
            )
    return rows, other_rules


def _print_prompt_sets(rows: dict[str, _ListRow], *, sets: list[str]) -> None:
    """The prompt sets every benchmark offers, as one line; the extra ones (the upstream set) a
    line each, naming the benchmarks that offer them."""
    offered = [set(row.prompt_sets.split(", ")) for row in rows.values() if row.prompt_sets]
    common = set.intersection(*offered) if offered else set()
    if common:
        ordered = [s for s in sets if s in common]
        out.print(f"prompt sets of every benchmark: {', '.join(ordered)}", highlight=False)
    by_sets: dict[str, list[str]] = {}
    for row in rows.values():
        more = ", ".join(sorted(set(row.prompt_sets.split(", ")) - common)) if row.prompt_sets else ""
        if more:
            by_sets.setdefault(more, []).append(row.name)
    for more, names in by_sets.items():
        out.print(f"also {more}: {', '.join(names)}", highlight=False)


@dataclass(frozen=True)
class _ListRow:
    """One benchmark's cells in `benchmarks list`."""

    name: str
    version: str
    rows: str
    kind: str
    rule: str
    licence: str
    source: str | Text
    origin: str
    prompt_sets: str


def _list_table(rows: list[_ListRow], *, with_origin: bool) -> Table:
    """One suite's table. Names and rules are what users type: never cut; the rest folds."""
    headers = ["name", "version", "rows", "rule", "licence", "source"]
    if with_origin:
        headers.append("origin")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for header in headers:
        table.add_column(
            header,
            no_wrap=header in ("name", "rule", "source"),
            style="bold" if header == "name" else "",
            overflow="fold",
            justify="right" if header == "rows" else "left",
        )
    for row in rows:
        cells: list[str | Text] = [row.name, row.version, row.rows, row.rule, row.licence, row.source]
        table.add_row(*cells, *([row.origin] if with_origin else []))
    return table


def _short_licence(licence: str | None) -> str:
    """The licence without its parenthesised detail (``MIT (optimind/LICENSE)`` -> ``MIT``): the
    YAML keeps the whole text; the table needs the name."""
    if not licence or licence == "none stated":
        return "none"
    return " ".join(re.sub(r"\([^)]*\)", "", licence).split()) or licence


def _repositories() -> list[str]:
    """``owner/name@commit`` (7 hex) of the T-Rex data and of every pinned field source."""
    from trex_eval.benchmarks import data

    manifest = data.load_manifest()
    pins = [f"{repo}@{pin.commit[:7]}" for repo, pin in sorted(data.load_sources().items())]
    return [f"{manifest.repository}@{manifest.commit[:7]}", *pins]


def _source_text(spec: BenchmarkSpec, path: Path, *, origin: str) -> str:
    """Where the rows come from: the pinned repository's name (its owner and commit are in the
    line under the tables, so that the table fits 80 columns), else the file."""
    from trex_eval.benchmarks import data

    if spec.source.root == "data":
        return data.load_manifest().repository.partition("/")[2]
    if spec.source.root == "source" and spec.source.repository:
        return spec.source.repository.partition("/")[2]
    where = Path(spec.source.path)
    return _relative(str(where if where.is_absolute() else path.parent / where))


# "lp": graded by the structure of the model (LP) it writes. Short, so that the longest names
# (`industryor@orthought-clean`) and both rules fit 80 columns.
_KIND = {"objective": "obj", "structure": "lp"}


def _unversioned(rule: str) -> str:
    return rule.rpartition("@")[0] if "@" in rule else rule


def _row_count(name: str, spec: BenchmarkSpec, *, data_dir: Path | None) -> str:
    """The count the YAML declares (loading checks it, so a benchmark that loads has exactly that
    many), else the usable rows of a load now, else ``?``. Declared counts keep ``list`` instant:
    loading all field benchmarks takes seconds; ``trex-eval data verify`` checks the files."""
    from trex_eval import benchmarks as benchmark

    if spec.source.rows is not None:
        return str(spec.source.rows)
    if spec.source.root == "data" and data_dir is None:
        return "?"
    return str(len(benchmark.load_benchmark(name, data_dir=data_dir)))


@app.command("show")
def benchmarks_show(
    name: Annotated[str, typer.Argument(help="Benchmark name or path to a benchmark YAML.")],
    problem_id: Annotated[str, typer.Argument(help="Problem id (e.g. 0, BENCH4OPT_2).")],
    prompt: Annotated[bool, typer.Option("--prompt", help="Also render the prompt messages.")] = False,
    prompt_set: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--prompt-set",
            help="Prompt set to render. Default: t-rex, or the benchmark's default set when it has no "
            "upstream templates.",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Show one problem: question, reference, instance files; optionally its rendered prompt."""
    from trex_eval import benchmarks as benchmark
    from trex_eval.prompting import render as prompting

    bench = benchmark.load_benchmark(name, data_dir=data_dir_for([name], data_dir))
    problem = bench.get(problem_id)
    out.rule(f"{bench.name} / {problem.id} (row {problem.index})")
    out.print(problem.question, markup=False)
    out.rule("reference")
    out.print(problem.reference.model_dump_json(indent=2), markup=False)
    for fname, content in problem.instance_files.items():
        out.rule(f"instance file {fname} ({len(content)} chars)")
        out.print(content[:2000] + ("\n..." if len(content) > 2000 else ""), markup=False)
    if problem.twin_group:
        twins = [p.id for p in bench.problems if p.twin_group == problem.twin_group and p.id != problem.id]
        out.print(f"twin wordings: {', '.join(twins) or '-'}")
    if prompt:
        chosen = prompt_set or (
            prompting.UPSTREAM_SET
            if bench.spec.prompt.upstream is not None
            else bench.spec.prompt.default_set
        )
        rendered = prompting.PromptRenderer(bench, chosen).render(problem)
        for message in rendered.messages:
            out.rule(Text(f"prompt [{chosen}] {message.role}"))
            out.print(message.content, markup=False)


@app.command("diff")
def benchmarks_diff(
    a: Annotated[str, typer.Argument(help="The first version (e.g. mamo-complexlp), or a benchmark YAML.")],
    b: Annotated[str, typer.Argument(help="The second version (e.g. mamo-complexlp@sirl-fixed).")],
    show: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--show",
            min=0,
            help="List at most N problems of each kind (removed, added, reworded, relabelled). Default: all.",
            show_default=False,
        ),
    ] = None,
    similarity: Annotated[
        float,
        typer.Option(
            "--similarity",
            min=0.0,
            max=1.0,
            help="Questions at least this similar (difflib ratio) are one problem reworded.",
        ),
    ] = 0.5,
    data_dir: DataDirOption = None,
) -> None:
    """How version B of a benchmark differs from version A, problem by problem, as Markdown.

    Problems are matched by id when both versions name them alike, else by whitespace-normalised
    question text, then by similar wording. Lists the problems removed (only in A), added (only in
    B), reworded and relabelled (old and new labels), after a table of counts.

    Exit code: 0 when the two versions have the same problems and labels, 1 when they differ, 2 on
    an error (an unknown benchmark name, missing data).
    """
    from trex_eval.benchmarks import load_benchmark
    from trex_eval.benchmarks.diff import diff, render

    # The option's default is the engine's (0.5), written out so that --help needs no import.
    root = data_dir_for([a, b], data_dir)
    first, second = load_benchmark(a, data_dir=root), load_benchmark(b, data_dir=root)
    if first.spec.family != second.spec.family:
        # Allowed (a copy may be registered under another family), but rarely what was meant.
        err.print(
            f"warning: {first.name} ({first.spec.family}) and {second.name} ({second.spec.family}) are "
            "different benchmark families; problems are matched by text",
            markup=False,
            highlight=False,
        )
    result = diff(first, second, similarity=similarity, progress=_DiffProgress())
    echo_text(render(result, show=show))
    counts = result.counts()
    if counts["unchanged"] != counts["a"] or counts["unchanged"] != counts["b"]:
        raise typer.Exit(1)


@dataclass
class _DiffProgress:
    """Lines on stderr while a diff scores similar questions, from ``after_s`` seconds on and at
    most one every ``every_s`` (a quick diff prints none)."""

    after_s: float = 3.0
    every_s: float = 5.0
    started: float = field(default_factory=time.monotonic)
    shown: float = 0.0

    def __call__(self, done: int, planned: int) -> None:
        now = time.monotonic()
        if now - self.started >= self.after_s and now - self.shown >= self.every_s:
            self.shown = now
            err.print(
                f"benchmarks diff: {done} of {planned} question similarities computed so far "
                f"({now - self.started:.0f} s)",
                markup=False,
                highlight=False,
            )


@app.command("validate")
def benchmarks_validate(
    name_or_file: Annotated[str, typer.Argument(help="A benchmark YAML file, or a benchmark name.")],
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt", help="Print the first problem's rendered prompt in full.")
    ] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Check a benchmark as a run would, without running it: the YAML, every data row, the grading
    rules and the first problem's prompt.

    Rows with problems are listed (file:line, field, message) and skipped; they are warnings. The
    exit code is 2 when the YAML itself is invalid, its data are missing, or no row is usable.
    """
    from trex_eval.benchmarks import user as userbench
    from trex_eval.protocols.plan import rules_by_protocol

    report = userbench.validate(
        name_or_file, data_dir=data_dir_for([name_or_file], data_dir), rules=rules_by_protocol
    )
    _print_report(report, show_prompt=show_prompt)


@app.command("add")
def benchmarks_add(
    file: Annotated[Path, typer.Argument(help="The benchmark YAML file to register.")],
    name: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--name", help="Register under this name (default: the YAML's `name`).", show_default=False
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace an earlier registration of the same name.")
    ] = False,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt", help="Print the first problem's rendered prompt in full.")
    ] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Validate a benchmark YAML (as `benchmarks validate` does) and register it, so that
    `trex-eval run -b NAME` and `trex-eval grade --benchmark NAME` find it.

    The registered copy lives in the user config directory ($TREX_CONFIG_DIR/benchmarks); a relative
    source.path in it is made absolute, so the data stay where they are. Names of shipped benchmarks
    are refused.
    """
    from trex_eval.benchmarks import user as userbench
    from trex_eval.protocols.plan import rules_by_protocol

    if not file.is_file():
        raise typer.BadParameter(f"no such file: {file}", param_hint="FILE")
    report = userbench.validate(
        str(file), data_dir=data_dir_for([str(file)], data_dir), rules=rules_by_protocol
    )
    _print_report(report, show_prompt=show_prompt)
    registration = userbench.register(report, name=name, replace=replace)
    verb = "replaced" if registration.replaced else "registered"
    out.print(f"{verb} benchmark '{registration.name}': {registration.path}", markup=False, highlight=False)
    for change in registration.changes:
        out.print(f"  in the registered copy, {change}", markup=False, highlight=False)
    out.print(
        f"use it with: trex-eval run -b {registration.name} --model MODEL   or   "
        f"trex-eval grade --completions FILE --benchmark {registration.name}",
        markup=False,
        highlight=False,
    )


@app.command("remove")
def benchmarks_remove(
    name: Annotated[str, typer.Argument(help="Name of a registered (not shipped) benchmark.")],
) -> None:
    """Remove a registered benchmark; its data files are left untouched."""
    from trex_eval.benchmarks import user as userbench

    removed = userbench.unregister(name)
    out.print(f"removed benchmark '{name}' ({removed})", markup=False, highlight=False)


def _print_report(report: ValidationReport, *, show_prompt: bool) -> None:
    from trex_eval.protocols import DEFAULT_PROTOCOL

    bench, spec = report.benchmark, report.benchmark.spec
    rules = report.rules
    lines = [
        ("benchmark", f"{bench.name}: {spec.title}"),
        ("spec", _relative(str(bench.spec_path))),
        ("source", f"{_relative(str(report.source))} ({report.rows_read} rows read)"),
        (
            "grading",
            f"{spec.grader.kind.value}; rule {rules[DEFAULT_PROTOCOL]} ("
            + ", ".join(
                f"{name} protocol: {rule}" for name, rule in rules.items() if name != DEFAULT_PROTOCOL
            )
            + ")",
        ),
        ("usable", f"{len(bench.problems)} problems; {len(report.row_errors)} rows with problems"),
    ]
    for rendered in report.prompts:
        sizes = ", ".join(f"{m.role} {len(m.content)} chars" for m in rendered.messages)
        lines.append(("prompt", f"set {rendered.prompt_set}, problem '{rendered.problem_id}': {sizes}"))
    summary = Table.grid(padding=(0, 2))
    for key, value in lines:
        summary.add_row(Text(key, style="bold"), Text(value))
    out.print(summary)
    for note in report.notes:
        err.print(f"warning: {note}", markup=False, highlight=False)
    if report.row_errors:
        # Paths in the table are relative to the source's folder: the summary names it once.
        folder = report.source if report.source.is_dir() else report.source.parent
        table = Table(
            title=f"rows skipped (paths relative to {_relative(str(folder))})", title_justify="left"
        )
        table.add_column("where (file:line)", overflow="fold")
        table.add_column("field", overflow="fold")
        table.add_column("problem", overflow="fold")
        for error in report.row_errors:
            table.add_row(
                Text(_without_prefix(error.where, folder)),
                Text(error.field),
                Text(_without_prefix(error.message, folder)),
            )
        out.print(table)
    for rendered in report.prompts:
        for message in rendered.messages:
            text = message.content
            if not show_prompt and len(text) > _PROMPT_PREVIEW_CHARS:
                text = text[:_PROMPT_PREVIEW_CHARS] + f" ... ({len(text)} chars; --show-prompt prints all)"
            out.rule(Text(f"prompt [{rendered.prompt_set}] {message.role}"), characters="-")
            out.print(text, markup=False, highlight=False)
