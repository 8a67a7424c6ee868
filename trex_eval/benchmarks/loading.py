"""Benchmarks as data: ``benchmarks/*.yaml`` -> :class:`BenchmarkSpec` -> :class:`Benchmark` of Problems.

A benchmark YAML names its source file, how fields map onto a :class:`~trex_eval.records.Problem`,
the grader kind and default rule, and its prompts. It holds no code: graders, rules and
extractors are referred to by registered name. See ``docs/byo-benchmark.md`` for the schema.

Errors in a YAML file are reported with file, line and field. Errors in data rows are collected
per row (``Benchmark.row_errors``); with ``strict=True`` (the shipped benchmarks) any row error or
a row count different from ``source.rows`` aborts loading.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from trex_eval import config
from trex_eval.benchmarks import assets
from trex_eval.benchmarks.problem_builder import DataAbsent, ProblemBuilder, RowProblem
from trex_eval.benchmarks.rows import Row, read_problem_folders, read_rows
from trex_eval.benchmarks.spec import BenchmarkSpec, known_keys
from trex_eval.errors import BenchmarkError, ConfigError
from trex_eval.files import load_yaml
from trex_eval.records import Problem


@dataclass(frozen=True)
class RowError:
    """A data row that could not become a Problem."""

    where: str
    field: str
    message: str
    absent: bool = False
    """Left out only because a data file is missing from this copy: ``source.rows`` counts it."""

    def __str__(self) -> str:
        return f"{self.where}: field '{self.field}': {self.message}"


@dataclass(frozen=True)
class Benchmark:
    """A loaded benchmark.

    ``root`` is the folder of the source file (instance and reference paths are relative to it);
    ``data_root`` the data directory (upstream templates live there) or ``None``.
    ``sha256`` digests the spec and every file read, for run provenance. ``skipped``: rows left
    out because they have no label (``labels.unlabelled: skip``).
    """

    spec: BenchmarkSpec
    problems: tuple[Problem, ...]
    root: Path
    data_root: Path | None
    sha256: str
    spec_path: Path
    row_errors: tuple[RowError, ...] = ()
    skipped: tuple[RowError, ...] = ()
    _by_id: dict[str, Problem] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def shipped(self) -> bool:
        """Whether this is one of trex-eval's own benchmarks (see :func:`is_shipped_spec`)."""
        return is_shipped_spec(self.spec_path)

    def __len__(self) -> int:
        return len(self.problems)

    def get(self, problem_id: str) -> Problem:
        """The problem with ``problem_id``. Raises BenchmarkError listing nearby ids if unknown."""
        if not self._by_id:
            self._by_id.update({p.id: p for p in self.problems})
        try:
            return self._by_id[problem_id]
        except KeyError:
            sample = ", ".join(p.id for p in self.problems[:3])
            raise BenchmarkError(
                f"no problem with id '{problem_id}' in benchmark '{self.name}'",
                hint=f"ids look like: {sample}, ... ({len(self.problems)} in all)",
            ) from None


# --------------------------------------------------------------------------- spec files


def shipped_spec_paths() -> dict[str, Path]:
    """Shipped benchmark name -> YAML path."""
    return {path.stem: path for path in sorted(assets.benchmarks_dir().glob("*.yaml"))}


def is_shipped_spec(spec_path: Path) -> bool:
    """Whether ``spec_path`` is a benchmark trex-eval ships (its data comes from ``trex-eval data
    pull``) rather than the user's own YAML (its data is wherever that YAML says): messages about a
    missing file tell the first to check the data download and the second to fix its YAML."""
    return spec_path.resolve().parent == assets.benchmarks_dir().resolve()


def user_benchmarks_dir() -> Path:
    """Where ``trex-eval benchmarks add`` registers user benchmarks (``<config dir>/benchmarks``)."""
    return config.config_dir() / "benchmarks"


def user_spec_paths() -> dict[str, Path]:
    """Registered user benchmark name -> YAML path (the file name without ``.yaml``)."""
    folder = user_benchmarks_dir()
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def known_spec_paths() -> dict[str, Path]:
    """Shipped and registered benchmarks; a registered name never hides a shipped one."""
    return {**user_spec_paths(), **shipped_spec_paths()}


def load_spec(path: Path) -> BenchmarkSpec:
    """Parse and validate one benchmark YAML.

    Raises:
        BenchmarkError: unreadable YAML or schema violation, located as ``file:line: field``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchmarkError(f"cannot read benchmark file: {exc.strerror}", where=str(path)) from exc
    try:
        raw = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise BenchmarkError(f"invalid YAML: {getattr(exc, 'problem', exc)}", where=where) from exc
    if not isinstance(raw, dict):
        raise BenchmarkError("a benchmark file must be a YAML mapping", where=str(path))
    try:
        return BenchmarkSpec.model_validate(raw)
    except ValidationError as exc:
        problems = _schema_problems(exc, text)
    hint = "see docs/byo-benchmark.md for the benchmark file schema"
    if len(problems) == 1:
        ((line, message),) = problems
        raise BenchmarkError(message, where=f"{path}:{line}" if line else str(path), hint=hint)
    listed = "".join(
        f"\n    {path}:{line}: {message}" if line else f"\n    {message}" for line, message in problems
    )
    raise BenchmarkError(
        f"{len(problems)} problems in the benchmark file:{listed}", where=str(path), hint=hint
    )


def _schema_problems(exc: ValidationError, text: str) -> list[tuple[int | None, str]]:
    """Every schema violation of a benchmark file as (line, message), in file order. An unknown
    key is named with the key it most resembles; a required key it stands for (``questoin`` for
    ``question``) is not reported missing as well."""
    errors = [(tuple(str(part) for part in error["loc"]), error) for error in exc.errors()]
    explained: set[tuple[str, ...]] = set()
    messages: dict[tuple[str, ...], str] = {}
    for loc, error in errors:
        if error["type"] != "extra_forbidden":
            continue
        keys = known_keys(loc[:-1])
        guess = difflib.get_close_matches(loc[-1], keys, n=1, cutoff=0.6)
        if guess:
            explained.add((*loc[:-1], guess[0]))
        known = f"did you mean '{guess[0]}'?" if guess else f"known here: {', '.join(keys) or 'none'}"
        messages[loc] = f"unknown key '{'.'.join(loc)}' ({known})"
    problems: list[tuple[int | None, str]] = []
    for loc, error in errors:
        if error["type"] == "missing" and loc in explained:
            continue
        message = messages.get(loc) or f"field '{'.'.join(loc)}': {_schema_message(error)}"
        problems.append((_yaml_line(text, loc), message))
    return sorted(problems, key=lambda problem: problem[0] or 0)


def _schema_message(error: ErrorDetails) -> str:
    if error["type"] == "missing":
        return "required, missing"
    given = error.get("input")
    # A scalar the file holds is worth quoting (`objectiv`); a whole mapping is not.
    scalar = isinstance(given, str | int | float | bool) and len(str(given)) <= 80
    return f"{error['msg']} (got {given!r})" if scalar else error["msg"]


def spec_location(spec_path: Path, keys: Sequence[str]) -> str:
    """``file:line`` of the key at ``keys`` (``("grader", "rule")``) of a benchmark file, for
    messages about a value the file holds; the file alone where it cannot be read or parsed."""
    try:
        line = _yaml_line(spec_path.read_text(encoding="utf-8"), keys)
    except OSError:
        line = None
    return f"{spec_path}:{line}" if line else str(spec_path)


def _yaml_line(text: str, loc: Sequence[str]) -> int | None:
    """1-based line of the node at ``loc`` (or of its deepest existing parent)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            match = node.value[int(key)]
        else:
            match = None
        if match is None:
            break
        node, line = match, match.start_mark.line + 1
    return line


def resolve_spec_path(name_or_path: str, *, extra: Mapping[str, Path] | None = None) -> Path:
    """Path of a benchmark given its name (shipped or registered) or a path to a YAML file.

    Raises:
        BenchmarkError: unknown name (the message lists the known ones).
    """
    known = {**known_spec_paths(), **(extra or {})}
    if name_or_path in known:
        return known[name_or_path]
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    # Display names (`NL4OPT`, `B4O-Feasible`) differ from registry names only in case.
    folded = {name.casefold(): name for name in known}
    if name_or_path.casefold() in folded:
        return known[folded[name_or_path.casefold()]]
    close = difflib.get_close_matches(name_or_path.casefold(), list(folded), n=3, cutoff=0.6)
    guess = f" (did you mean {' or '.join(repr(folded[c]) for c in close)}?)" if close else ""
    raise BenchmarkError(
        f"unknown benchmark '{name_or_path}'{guess}",
        hint=f"known benchmarks: {', '.join(sorted(known))}; or pass a path to a benchmark .yaml file",
    )


def reads_data_dir(names: Sequence[str]) -> bool:
    """Whether any of these benchmarks (names or YAML paths) reads the T-Rex data directory.

    Raises:
        BenchmarkError: an unknown name or an invalid YAML.
    """
    return any(load_spec(resolve_spec_path(name)).source.root == "data" for name in names)


def source_root(name_or_path: str, *, data_dir: Path | None) -> Path:
    """The folder :func:`load_benchmark` would give as ``Benchmark.root``, from the YAML alone (no
    row is read): what a run hides from programs, known before the data loads.

    Raises:
        BenchmarkError: an unknown name, an invalid YAML, or a data directory it needs and lacks.
    """
    spec_path = resolve_spec_path(name_or_path)
    spec = load_spec(spec_path)
    source = (_source_base(spec, spec_path, data_dir) / spec.source.path).resolve()
    return source if source.is_dir() else source.parent


# --------------------------------------------------------------------------- loading


def load_benchmark(
    name_or_path: str,
    *,
    data_dir: Path | None,
    strict: bool | None = None,
    extra: Mapping[str, Path] | None = None,
) -> Benchmark:
    """Load a benchmark by name or YAML path.

    Args:
        name_or_path: shipped/registered name, or path to a YAML file.
        data_dir: the data directory; required for specs with ``source.root: data``.
        strict: abort on any row error or row-count mismatch. Default: True for shipped
            benchmarks, False for user files (bad rows are then reported and skipped).
        extra: additional name -> YAML path registrations (user benchmarks).

    Raises:
        BenchmarkError: bad spec, missing files, or (strict) bad rows.
    """
    spec_path = resolve_spec_path(name_or_path, extra=extra)
    spec = load_spec(spec_path)
    if strict is None:
        strict = is_shipped_spec(spec_path)
    base = _source_base(spec, spec_path, data_dir)
    source = (base / spec.source.path).resolve()
    if not source.exists():
        raise BenchmarkError(
            f"source data not found: {source}",
            where=f"{spec_location(spec_path, ('source', 'path'))}: source.path",
            hint=_missing_source_hint(spec, spec_path=spec_path, source=source),
        )
    loader = ProblemBuilder(spec, source_root=source if source.is_dir() else source.parent, data_dir=data_dir)
    if spec.source.layout == "folders":
        rows, read = read_problem_folders(
            source, pattern=spec.source.folder_glob, files=spec.source.folder_files
        )
        for path in read:
            loader.remember(path)
    else:
        rows = read_rows(source, file_format=spec.source.format)
    problems, errors, skipped = _problems(rows, loader, spec=spec)
    sizes_digest = ""
    if spec.scale is not None:
        problems, sizes_digest = _scaled(problems, spec, spec_path=spec_path)
    if strict:
        absent = sum(1 for row in skipped if row.absent)
        _refuse_bad_rows(spec, spec_path=spec_path, problems=problems, errors=errors, absent=absent)
    digest = hashlib.sha256(spec_path.read_bytes())
    for file_digest in loader.file_digests(source):
        digest.update(file_digest.encode())
    if sizes_digest:
        digest.update(f"scale={sizes_digest}".encode())
    return Benchmark(
        spec=spec,
        problems=tuple(problems),
        root=loader.source_root,
        data_root=data_dir,
        sha256=digest.hexdigest(),
        spec_path=spec_path,
        row_errors=tuple(errors),
        skipped=tuple(skipped),
    )


def _scaled(problems: list[Problem], spec: BenchmarkSpec, *, spec_path: Path) -> tuple[list[Problem], str]:
    """``problems`` with their scale (:func:`trex_eval.benchmarks.scale.scaled`), the error located
    at the spec's ``scale.sizes``."""
    from trex_eval.benchmarks.scale import scaled

    assert spec.scale is not None
    try:
        return scaled(problems, spec.scale, folder=spec_path.parent)
    except ConfigError as exc:
        raise BenchmarkError(
            exc.message,
            where=exc.where,
            hint=f"the sizes file named at {spec_location(spec_path, ('scale', 'sizes'))}: scale.sizes",
        ) from None


def _problems(
    rows: Sequence[Row], loader: ProblemBuilder, *, spec: BenchmarkSpec
) -> tuple[list[Problem], list[RowError], list[RowError]]:
    """The problems ``rows`` make, in order, the rows that make none and why (unreadable, a bad
    field, a duplicate id), and the unlabelled rows left out (``labels.unlabelled: skip``)."""
    problems: list[Problem] = []
    errors: list[RowError] = []
    skipped: list[RowError] = []
    seen: dict[str, str] = {}
    for row in rows:
        if row.error is None and spec.labels.unlabelled == "skip" and not loader.has_label(row):
            skipped.append(RowError(where=row.where, field="answer", message="no label: left out"))
            continue
        if row.error is not None:
            errors.append(RowError(where=row.where, field="(row)", message=row.error))
            continue
        try:
            problem = loader.problem(row)
        except DataAbsent as exc:
            skipped.append(RowError(where=row.where, field=exc.field, message=exc.message, absent=True))
            continue
        except RowProblem as exc:
            errors.append(RowError(where=row.where, field=exc.field, message=exc.message))
            continue
        if problem.id in seen:
            errors.append(
                RowError(row.where, "id", f"duplicate id '{problem.id}' (first at {seen[problem.id]})")
            )
            continue
        seen[problem.id] = row.where
        problems.append(problem)
    return problems, errors, skipped


def _refuse_bad_rows(
    spec: BenchmarkSpec,
    *,
    spec_path: Path,
    problems: Sequence[Problem],
    errors: Sequence[RowError],
    absent: int = 0,
) -> None:
    """The strict load's checks: no bad row, and the row count the spec pins (if any), which
    counts the ``absent`` rows (left out for a data file missing from this copy) as well.

    Raises:
        BenchmarkError: naming the first ten bad rows, or the count expected and found.
    """
    if errors:
        listed = "\n    ".join(str(e) for e in errors[:10])
        raise BenchmarkError(
            f"{len(errors)} bad rows in benchmark '{spec.name}':\n    {listed}", where=str(spec_path)
        )
    if spec.source.rows is not None and len(problems) + absent != spec.source.rows:
        hint = (
            "the data directory may be from another snapshot: run `trex-eval data verify`"
            if is_shipped_spec(spec_path)
            else f"set source.rows in {spec_path.name} to {len(problems)} if the data file is right"
        )
        raise BenchmarkError(
            f"expected {spec.source.rows} rows, found {len(problems) + absent}",
            where=f"{spec_location(spec_path, ('source', 'rows'))}: source.rows",
            hint=hint,
        )


def _missing_source_hint(spec: BenchmarkSpec, *, spec_path: Path, source: Path) -> str:
    """What to do about a missing source file: fetch the data where trex-eval ships it (a
    shipped benchmark), else correct the path, with the files of that name-alike near it."""
    if spec.source.root == "source":
        return "run `trex-eval data pull` (it installs the pinned repositories too), or set TREX_SOURCES_DIR"
    if is_shipped_spec(spec_path):
        return "run `trex-eval data verify` to check the data directory (`trex-eval data pull` fetches it)"
    base = "the YAML file's folder" if spec.source.root == "file" else "the data directory (root: data)"
    relative = "" if Path(spec.source.path).is_absolute() else f"source.path is relative to {base}; "
    folder = source.parent
    # A bounded look: the folder may be a large data directory.
    names = [p.name for p in itertools.islice(folder.iterdir(), 10_000)] if folder.is_dir() else []
    near = difflib.get_close_matches(source.name, names, n=3, cutoff=0.6)
    found = f" ({folder} holds {', '.join(near)})" if near else ""
    return f"{relative}fix source.path in {spec_path.name} to name your data file{found}"


def _source_base(spec: BenchmarkSpec, spec_path: Path, data_dir: Path | None) -> Path:
    """The folder ``source.path`` is relative to (see :class:`~trex_eval.benchmarks.spec.SourceSpec`)."""
    if spec.source.root == "file":
        return spec_path.parent
    if spec.source.root == "source":
        from trex_eval.benchmarks.data import source_dir
        from trex_eval.errors import DataError

        try:
            return source_dir(spec.source.repository or "", data_dir)
        except DataError as exc:
            raise BenchmarkError(
                exc.message, where=f"{spec_path}: source.repository", hint=exc.hint
            ) from None
    if data_dir is None:
        raise BenchmarkError(
            "this benchmark reads the data directory but none was given", where=str(spec_path)
        )
    return data_dir
