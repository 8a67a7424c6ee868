"""The scale of a benchmark's instances (MIPLIB-NL, issue 49): the size of each reference model,
the size bucket it falls in, and the memory a program of that bucket gets.

A benchmark whose YAML has a ``scale`` block (:class:`~trex_eval.benchmarks.spec.ScaleSpec`)
names a CSV of sizes beside it (``scripts/miplib_nl_sizes.py`` measures them by building each
reference model in the sandbox) and its buckets. Each row then says, in ``Problem.meta``:

* ``variables``, ``constraints``, ``nonzeros`` -- the reference model's counts (absent where the
  size is unknown: not measured, or its build ran over the measuring budget);
* ``size_bucket`` -- the first bucket whose ``below`` exceeds the larger of variables and
  constraints (the measure of gurobipy's size-limited licence, 2,000 of each, and of the
  verification caps, :data:`trex_eval.linear_model.MAX_COLUMNS` and ``MAX_ROWS``); the last
  bucket, which has no ``below``, takes the rest and every unknown size;
* ``memory_mib`` and ``record_mib`` -- the memory a program of that bucket gets and the size of
  its sample's record (whose half holds the captured matrix the harness re-solves), which
  :meth:`~trex_eval.protocols.plan.EvaluationPlan.limits_for` applies to its job
  (:class:`~trex_eval.records.SandboxLimits`).

Pure apart from :func:`read_sizes`, which reads the one CSV.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

from trex_eval.benchmarks.spec import ScaleSpec, SizeBucket
from trex_eval.errors import ConfigError
from trex_eval.records import Problem

SIZE_FIELDS = (
    "instance",
    "variables",
    "constraints",
    "nonzeros",
    "integers",
    "build_cpu_s",
    "build_rss_mib",
    "note",
)
"""The columns of a sizes CSV (``scripts/miplib_nl_sizes.py`` writes them)."""


@dataclass(frozen=True)
class ModelSize:
    """A reference model's counts; ``note`` says why they are unknown (then all are ``None``)."""

    variables: int | None
    constraints: int | None
    nonzeros: int | None
    note: str = ""

    @property
    def known(self) -> bool:
        return self.variables is not None and self.constraints is not None

    @property
    def extent(self) -> int | None:
        """The larger of variables and constraints (the measure the buckets cut by), ``None``
        when unknown."""
        if self.variables is None or self.constraints is None:
            return None
        return max(self.variables, self.constraints)


UNKNOWN = ModelSize(None, None, None, "not measured")


def read_sizes(path: Path) -> dict[str, ModelSize]:
    """Instance -> size, from a sizes CSV (:data:`SIZE_FIELDS`; extra columns ignored).

    Raises:
        ConfigError: the file is missing, lacks a column, or holds a count that is not a
            non-negative integer (the message names the line and column).
    """
    return _parsed(_read(path), path)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the sizes file: {exc.strerror}", where=str(path)) from None


def _parsed(data: bytes, path: Path) -> dict[str, ModelSize]:
    reader = csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""))
    have = reader.fieldnames or ()
    missing = [f for f in ("instance", "variables", "constraints", "nonzeros") if f not in have]
    if missing:
        raise ConfigError(f"the sizes file lacks the column(s) {', '.join(missing)}", where=str(path))
    return {row["instance"]: _size(row, where=f"{path}:{reader.line_num}") for row in reader}


def _size(row: dict[str, str], *, where: str) -> ModelSize:
    counts: list[int | None] = []
    for field in ("variables", "constraints", "nonzeros"):
        text = (row.get(field) or "").strip()
        if not text:
            counts.append(None)
            continue
        if not text.isdigit():
            raise ConfigError(f"{field} {text!r} is not a non-negative integer", where=where)
        counts.append(int(text))
    note = (row.get("note") or "").strip()
    if None in counts[:2]:
        return ModelSize(None, None, None, note or "not measured")
    return ModelSize(counts[0], counts[1], counts[2], note)


def bucket_of(size: ModelSize, buckets: tuple[SizeBucket, ...]) -> SizeBucket:
    """The bucket ``size`` falls in (module docstring); an unknown size goes to the last."""
    measure = size.extent
    for bucket in buckets:
        if measure is not None and bucket.below is not None and measure < bucket.below:
            return bucket
    return buckets[-1]


def scale_meta(size: ModelSize, spec: ScaleSpec) -> dict[str, str]:
    """What a row says of its scale (module docstring), as ``Problem.meta`` entries."""
    bucket = bucket_of(size, spec.buckets)
    meta = {
        "size_bucket": bucket.name,
        "memory_mib": str(bucket.memory_mib),
        "record_mib": str(bucket.record_mib),
    }
    if size.known:
        meta |= {"variables": str(size.variables), "constraints": str(size.constraints)}
        if size.nonzeros is not None:
            meta["nonzeros"] = str(size.nonzeros)
    else:
        meta["size_note"] = size.note
    return meta


def scaled(problems: list[Problem], spec: ScaleSpec, *, folder: Path) -> tuple[list[Problem], str]:
    """``problems`` with their scale in ``meta`` (module docstring), and the sizes file's sha256
    (the benchmark's digest covers it: the sizes decide each job's memory). ``folder``: the
    benchmark file's folder, where ``spec.sizes`` is found.

    Raises:
        ConfigError: the sizes file cannot be read (:func:`read_sizes`).
    """
    path = folder / spec.sizes
    data = _read(path)  # read once: parsed, and digested for the benchmark's digest
    sizes, digest = _parsed(data, path), hashlib.sha256(data).hexdigest()
    return [
        p.model_copy(update={"meta": {**p.meta, **scale_meta(sizes.get(p.id, UNKNOWN), spec)}})
        for p in problems
    ], digest
