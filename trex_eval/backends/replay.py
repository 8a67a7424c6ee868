"""The ``replay`` backend: completions recorded earlier, read from a JSONL file.

Generate once, grade many: re-grade a run under another rule, or grade completions produced
elsewhere, without calling a model. The file is indexed once, at :meth:`ReplayBackend.start`.

Options (``BackendSpec.options``):

``path`` (required)
    The JSONL file: one JSON object per line; blank lines are skipped.
``id_field`` (default ``problem_id``)
    Field holding the problem id (a string or an integer).
``text_field`` (default ``completion``)
    Field holding the completion: a string (the completion text) or an object in the shape of
    :class:`~trex_eval.records.Completion`, replayed with all its fields (reasoning, usage,
    finish_reason, error, ...). ``null`` replays as a failed request.
``sample_field`` (default: ``sample_index`` when the file's first record has that field)
    Field holding the 0-based sample index. Without one, the records of an id are samples 0, 1,
    2, ... in file order.
``benchmark_field`` (default: ``benchmark`` when the file's first record has that field)
    Field holding the benchmark name; records are then matched on benchmark too (ids repeat
    across benchmarks: NL4OPT and OptiBench both have a problem ``"5"``).
``round_field`` (default: ``round`` when the file's first record has that field)
    Field holding the repair round a record answers (``run --repair N``; 0, or a record without
    the field: the sample's first answer). A record of a trex-eval ``samples.jsonl`` also
    replays its ``rounds`` (each round's ``completion`` under its ``round``).

Field names may be dotted paths into nested objects, with integer steps into lists
(``response.choices.0.message.content``). With the defaults, a trex-eval ``samples.jsonl`` from an
earlier run replays as it is: its records carry ``benchmark``, ``problem_id``, ``sample_index``
and a full ``completion`` object, and so does a ``completions.jsonl`` with
``id_field=completion.problem_id sample_field=completion.sample_index`` (its lines carry their
round): a repair run replays round by round, each round answered by the completion recorded for
it, whatever conversation asks for it.

When a key (benchmark, id, sample) occurs on several lines, the last one wins, as in an
append-only run file. A request with no recorded completion gets a Completion with ``error`` set
(``"no recorded completion for <id> ..."``). A malformed line is a :class:`ConfigError` naming
the file and line, except a last line that is not valid JSON and has no line break: that is what
an interrupted writer leaves, and it is skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from trex_eval.backends.base import Backend, BackendKind, BackendSpec, GenerationRequest
from trex_eval.backends.option_errors import invalid_options
from trex_eval.errors import BackendError, ConfigError
from trex_eval.records import Completion

_MISSING = object()


class ReplayOptions(BaseModel):
    """Options of the ``replay`` backend (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    id_field: str = "problem_id"
    text_field: str = "completion"
    sample_field: str | None = None
    benchmark_field: str | None = None
    round_field: str | None = None
    allow_torn: bool = False
    """Grade a file whose last line is cut off (no line break, not valid JSON) without that line,
    instead of refusing it; a run directory's own file may end so after a crash."""


@dataclass(frozen=True)
class ReplayFields:
    """The field paths in force for one file, after the ``sample``/``benchmark`` defaults."""

    id: str
    text: str
    sample: str | None
    benchmark: str | None
    round: str | None = None


ReplayKey = tuple[str | None, str, int]
"""(benchmark or ``None`` when the file has no benchmark field, problem id, sample index)."""


@dataclass(frozen=True)
class ReplayIndex:
    """Recorded completions of one file by :data:`ReplayKey`, plus the file's provenance."""

    path: Path
    sha256: str
    fields: ReplayFields
    completions: Mapping[ReplayKey, Completion]
    records: int
    skipped_torn_line: bool
    torn_problem_id: str | None = None
    """The problem id read from the torn line, where its id field survived the cut."""
    later_rounds: Mapping[tuple[ReplayKey, int], Completion] = field(default_factory=dict)
    """Completions of repair rounds 1, 2, ... by (key, round); ``completions`` holds round 0."""

    def torn_line_cost(self, benchmark: str, *, samples: int, problems: Collection[str]) -> str:
        """What skipping the cut-off last line costs a grade of ``benchmark`` (whose problem ids
        are ``problems``) at ``samples`` per problem, in words: nothing when earlier lines hold
        every sample of its problem, else the samples that count as missing."""
        torn = self.torn_problem_id
        if torn is None:
            return "its problem id could not be read"
        if torn not in problems:
            return f"its id {torn!r} is no problem of {benchmark}"
        held = {s for b, p, s in self.completions if p == torn and b in (None, benchmark) and s < samples}
        if not held:
            return f"its problem {torn!r} counts as missing"
        if len(held) >= samples:
            return f"nothing is missing: earlier lines hold the {samples} sample(s) of problem {torn!r}"
        return (
            f"problem {torn!r} is graded from its earlier lines; {samples - len(held)} of its {samples} "
            "samples count as missing"
        )

    def lookup(
        self, *, benchmark: str, problem_id: str, sample_index: int, round_index: int = 0
    ) -> Completion | None:
        scope = benchmark if self.fields.benchmark is not None else None
        key = (scope, problem_id, sample_index)
        return self.completions.get(key) if round_index == 0 else self.later_rounds.get((key, round_index))


def _field_value(record: Mapping[str, object], path: str) -> object:
    """The value at dotted ``path`` in ``record``; ``_MISSING`` when a step does not exist.

    A key that contains dots itself is found when it is the whole path.
    """
    if path in record:
        return record[path]
    value: object = record
    for step in path.split("."):
        if isinstance(value, Mapping) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return _MISSING
    return value


def load_index(path: Path, options: ReplayOptions, *, model: str | None = None) -> ReplayIndex:
    """Read and index a replay file.

    Args:
        path: the JSONL file.
        options: field names (``options.path`` is not used here).
        model: ``Completion.model`` for records that hold only a text.

    Raises:
        ConfigError: the file cannot be read, a line is malformed (``file:line`` in ``where``), or
            the last line is cut off and ``options.allow_torn`` is not set.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read replay file: {exc.strerror}", where=str(path), hint="check the replay option path="
        ) from None
    reader = _RecordReader(path, options, model=model)
    lines = data.split(b"\n")
    torn = False
    torn_id: str | None = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = number == len(lines)
        try:
            record = _json_object(raw)
        except ValueError as exc:
            if not is_last:
                raise ConfigError(
                    f"malformed line: {exc}",
                    where=f"{path}:{number}",
                    hint=f"make line {number} one JSON object (as the other lines are) or delete it, "
                    "then run the command again",
                ) from None
            # No line break after it: an interrupted append, or a file cut short.
            if not options.allow_torn:
                raise ConfigError(
                    "the last line is cut off (no line break after it, and not valid JSON): the file "
                    "may be incomplete",
                    where=f"{path}:{number}",
                    hint="complete or remove that line, or pass --allow-torn-line to grade without it "
                    "(its problem then counts as missing)",
                ) from None
            torn, torn_id = True, _torn_id(raw, options.id_field)
            continue
        reader.add(record, line=number)
    return ReplayIndex(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        fields=reader.fields or _fields(options, first={}),
        completions=reader.completions,
        records=reader.records,
        skipped_torn_line=torn,
        torn_problem_id=torn_id,
        later_rounds=reader.later_rounds,
    )


def _torn_id(raw: bytes, id_field: str) -> str | None:
    """The value of a top-level ``id_field`` in a JSON line cut short, where it survived the cut
    (a string or an integer followed by a delimiter); ``None`` otherwise."""
    key = re.escape(json.dumps(id_field))
    found = re.search(key.encode() + rb'\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+)\s*[,}])', raw)
    if found is None:
        return None
    if found.group(1) is not None:
        try:
            return str(json.loads(b'"' + found.group(1) + b'"'))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
    return found.group(2).decode()


def _json_object(raw: bytes) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, found {type(value).__name__}")
    return value


def _fields(options: ReplayOptions, *, first: Mapping[str, object]) -> ReplayFields:
    return ReplayFields(
        id=options.id_field,
        text=options.text_field,
        sample=options.sample_field or ("sample_index" if "sample_index" in first else None),
        benchmark=options.benchmark_field or ("benchmark" if "benchmark" in first else None),
        round=options.round_field or ("round" if "round" in first else None),
    )


class _RecordReader:
    """Turns records into index entries; the field defaults are fixed by the first record."""

    def __init__(self, path: Path, options: ReplayOptions, *, model: str | None) -> None:
        self._path = path
        self._options = options
        self._model = model
        self.fields: ReplayFields | None = None
        self.completions: dict[ReplayKey, Completion] = {}
        self.later_rounds: dict[tuple[ReplayKey, int], Completion] = {}
        self.records = 0
        self._seen: Counter[tuple[str | None, str]] = Counter()

    def add(self, record: Mapping[str, object], *, line: int) -> None:
        if self.fields is None:
            self.fields = _fields(self._options, first=record)
        fields = self.fields
        where = f"{self._path}:{line}"
        problem_id = _id_text(self._required(record, fields.id, where), field=fields.id, where=where)
        benchmark = None
        if fields.benchmark is not None:
            benchmark = _id_text(
                self._required(record, fields.benchmark, where), field=fields.benchmark, where=where
            )
        round_index = 0
        if fields.round is not None:
            found = _field_value(record, fields.round)
            round_index = 0 if found is _MISSING else _count(found, field=fields.round, where=where)
        if fields.sample is not None:
            sample = _count(self._required(record, fields.sample, where), field=fields.sample, where=where)
        elif round_index:  # a later round of the sample last counted for this id
            sample = max(self._seen[(benchmark, problem_id)] - 1, 0)
        else:
            sample = self._seen[(benchmark, problem_id)]
            self._seen[(benchmark, problem_id)] += 1
        value = self._required(record, fields.text, where)
        completion = self._completion(
            value, field=fields.text, problem_id=problem_id, sample_index=sample, where=where
        )
        key = (benchmark, problem_id, sample)
        if round_index:
            self.later_rounds[(key, round_index)] = completion
        else:
            self.completions[key] = completion
        self.records += 1
        rounds = record.get("rounds") if fields.text == "completion" else None
        if isinstance(rounds, list):  # a samples.jsonl record of a repair run
            for entry in rounds:
                if isinstance(entry, dict) and isinstance(entry.get("round"), int) and "completion" in entry:
                    self.later_rounds[(key, entry["round"])] = self._completion(
                        entry["completion"],
                        field="rounds.completion",
                        problem_id=problem_id,
                        sample_index=sample,
                        where=where,
                    )

    def _required(self, record: Mapping[str, object], path: str, where: str) -> object:
        value = _field_value(record, path)
        if value is _MISSING:
            raise ConfigError(
                f"no field '{path}' in this record",
                where=where,
                hint="name the right field: `trex-eval grade --id-field PATH --text-field PATH` (or "
                "--code-field), or, as replay backend options, --opt id_field=PATH text_field=PATH "
                "sample_field=PATH benchmark_field=PATH (dotted paths reach nested fields)",
            )
        return value

    def _completion(
        self, value: object, *, field: str, problem_id: str, sample_index: int, where: str
    ) -> Completion:
        if isinstance(value, str):
            return Completion(problem_id=problem_id, sample_index=sample_index, text=value, model=self._model)
        if value is None:
            return Completion(
                problem_id=problem_id,
                sample_index=sample_index,
                text="",
                model=self._model,
                error="the recorded completion is null",
            )
        if isinstance(value, dict):
            try:
                return Completion.model_validate(
                    {**value, "problem_id": problem_id, "sample_index": sample_index}
                )
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ConfigError(
                    f"field '{field}' is an object but not a completion record ({problems})",
                    where=where,
                    hint="point text_field at the text itself, e.g. text_field=completion.text",
                ) from None
        raise ConfigError(
            f"field '{field}' must be a string or a completion object, found {type(value).__name__}",
            where=where,
            hint="name the field that holds the completion text (--text-field PATH, or text_field=PATH)",
        )


def _count(value: object, *, field: str, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(
            f"field '{field}' must be a non-negative integer (found {value!r:.40})",
            where=where,
            hint=f"correct that line's '{field}', or name another field for it",
        )
    return value


def _id_text(value: object, *, field: str, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ConfigError(
        f"field '{field}' must be a string or an integer, found {type(value).__name__}",
        where=where,
        hint=f"correct that line's '{field}', or name the field that holds the problem id (--id-field)",
    )


class ReplayBackend:
    """Serves completions from a replay file (see the module docstring)."""

    def __init__(self, spec: BackendSpec) -> None:
        self.name = spec.name
        self._model = spec.model or None
        try:
            self._options = ReplayOptions.model_validate(spec.options)
        except ValidationError as exc:
            missing = any(e["type"] == "missing" and e["loc"] == ("path",) for e in exc.errors())
            raise invalid_options(
                exc,
                ReplayOptions.model_fields,
                backend=spec.backend,
                where=f"model preset '{spec.name}'",
                hint="give the file to replay: --opt path=results/<run>/samples.jsonl" if missing else None,
            ) from None
        self._path = Path(self._options.path).expanduser().resolve()
        self._index: ReplayIndex | None = None

    async def start(self) -> None:
        """Index the file (once).

        Raises:
            ConfigError: unreadable file or malformed line.
        """
        if self._index is None:
            self._index = load_index(self._path, self._options, model=self._model)

    async def close(self) -> None:
        return None

    def describe(self) -> Mapping[str, object]:
        """File path, digest and record count (after :meth:`start`), and the fields in force."""
        index = self._index
        description: dict[str, object] = {"backend": "replay", "path": str(self._path)}
        if index is not None:
            description |= {
                "sha256": index.sha256,
                "records": index.records,
                "completions": len(index.completions),
                "skipped_torn_line": index.skipped_torn_line,
                "fields": {
                    "id": index.fields.id,
                    "text": index.fields.text,
                    "sample": index.fields.sample,
                    "benchmark": index.fields.benchmark,
                    # only for files that record repair rounds (earlier files describe as before)
                    **({"round": index.fields.round} if index.fields.round is not None else {}),
                },
            }
            if index.later_rounds:
                description["repair_rounds"] = len(index.later_rounds)
        return description

    async def generate(self, request: GenerationRequest) -> Completion:
        """The recorded completion for the request's (benchmark, problem id, sample index).

        Raises:
            BackendError: the backend was not started (the file is not indexed yet).
        """
        if self._index is None:
            raise BackendError(f"backend for model preset '{self.name}' is not started: call start() first")
        problem = request.problem
        found = self._index.lookup(
            benchmark=problem.benchmark,
            problem_id=problem.id,
            sample_index=request.sample_index,
            round_index=request.round,
        )
        if found is not None:
            return found
        scope = f"benchmark {problem.benchmark}, " if self._index.fields.benchmark is not None else ""
        repair = f", repair round {request.round}" if request.round else ""
        return Completion(
            problem_id=problem.id,
            sample_index=request.sample_index,
            text="",
            model=self._model,
            error=f"no recorded completion for {problem.id} ({scope}sample {request.sample_index}{repair}) "
            f"in {self._path.name}",
        )


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``replay`` backend.

    Raises:
        ConfigError: ``path`` missing, or an unknown option.
    """
    return ReplayBackend(spec)


BACKEND = BackendKind(create=create)
