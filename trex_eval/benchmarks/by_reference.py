"""Instances whose problem and data are separated (MIPLIB-NL; see
:class:`~trex_eval.benchmarks.spec.ByReferenceSpec`): the question rendered from the instance
file, its label-free copy handed to the program under each of its names, and its data files
handed by reference (:class:`~trex_eval.records.InstanceLink`).

What a program and a prompt get is built here and nowhere else, so the one rule is kept in one
place: the instance file's label keys (``withhold``) never leave the harness, and the data
files' contents never enter a prompt."""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.benchmarks.spec import ByReferenceSpec
from trex_eval.records import InstanceLink

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_CHUNK = 1 << 20


class InstanceError(Exception):
    """An instance folder that cannot become a problem; ``absent`` (non-empty) when only because
    data files it names are missing from this copy (a row left out, not a bad row)."""

    def __init__(self, field: str, message: str, *, absent: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.absent = absent
        """The missing data files' paths, relative to the instance folder."""


@dataclass(frozen=True)
class InstanceParts:
    """What one instance folder gives its :class:`~trex_eval.records.Problem`."""

    question: str
    instance_files: dict[str, str]
    links: tuple[InstanceLink, ...]
    meta: dict[str, str]


def instance_parts(
    spec: ByReferenceSpec, *, folder: Path, question: str, values: Mapping[str, Any]
) -> InstanceParts:
    """The question, label-free instance file and data links of the instance in ``folder``.

    ``question`` is the description with its placeholders; ``values`` the row's fields (the
    instance file's text under ``spec.instance``).

    Raises:
        InstanceError: the instance file is not a JSON object, a data file path leaves the
            folder, the data exceed ``spec.max_bytes``, or (``absent``) a data file is missing.
    """
    try:
        instance = json.loads(str(values.get(spec.instance, "")))
    except json.JSONDecodeError as exc:
        raise InstanceError(spec.instance, f"invalid JSON: {exc.msg}") from None
    if not isinstance(instance, dict):
        raise InstanceError(spec.instance, "expected a JSON object")
    parameters = instance.get(spec.parameters) or {}
    files = instance.get(spec.files) or {}
    if not isinstance(parameters, dict) or not isinstance(files, dict):
        raise InstanceError(spec.instance, f"'{spec.parameters}' and '{spec.files}' must be objects")
    links = _links(spec, folder=folder, files=files)
    label_free = {key: value for key, value in instance.items() if key not in spec.withhold}
    text = json.dumps(label_free, ensure_ascii=False, indent=2) + "\n"
    rendered = render_question(question, parameters=parameters, files=files, names=spec.names)
    meta = {
        "data_files": str(len(links)),
        "data_bytes": str(sum(link.bytes for link in links)),
        "unfilled_placeholders": " ".join(sorted(_unfilled(question, parameters))),
    }
    return InstanceParts(
        question=rendered,
        instance_files={
            **dict.fromkeys(spec.names, text),
            **{posixpath.join(name, ".keep"): "" for name in spec.folders},
        },
        links=links,
        meta={key: value for key, value in meta.items() if value},
    )


def render_question(
    question: str, *, parameters: Mapping[str, Any], files: Mapping[str, Any], names: tuple[str, ...]
) -> str:
    """``question`` with each ``{name}`` of ``parameters`` filled in (others left as written),
    then a section naming the instance file and each data file's path and description."""
    filled = _PLACEHOLDER.sub(
        lambda match: _value_text(parameters[match[1]]) if match[1] in parameters else match[0], question
    )
    also = f" (also as `{'`, `'.join(names[1:])}`)" if len(names) > 1 else ""
    lines = [
        filled.strip(),
        "",
        "# Instance files",
        f"The working directory holds `{names[0]}`{also}: this instance's `parameters` and the "
        "`path` and description of each data file below. The data files are read-only, at "
        "those paths relative to the working directory.",
    ]
    for key, entry in files.items():
        path = entry.get("path", "") if isinstance(entry, dict) else ""
        description = entry.get("description", "") if isinstance(entry, dict) else ""
        lines += ["", f"## `{path}` ({key})", str(description).strip()]
    return "\n".join(lines)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _unfilled(question: str, parameters: Mapping[str, Any]) -> set[str]:
    """Placeholders the parameters do not fill (upstream gaps, kept as written)."""
    return {name for name in _PLACEHOLDER.findall(question) if name not in parameters}


def _links(spec: ByReferenceSpec, *, folder: Path, files: Mapping[str, Any]) -> tuple[InstanceLink, ...]:
    root = folder.resolve()
    links: list[InstanceLink] = []
    absent: list[str] = []
    for key, entry in files.items():
        raw = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(raw, str) or not raw.strip():
            raise InstanceError(spec.files, f"data file '{key}' has no path")
        name = posixpath.normpath(raw.strip())
        source = (root / name).resolve()
        if name.startswith(("/", "..")) or not source.is_relative_to(root):
            raise InstanceError(spec.files, f"data file path {raw!r} leaves the instance folder")
        if name in spec.names:
            raise InstanceError(spec.files, f"data file path {raw!r} is the instance file's name")
        if not source.is_file():
            absent.append(name)
            continue
        links.append(_link(name, source))
    if absent:
        raise InstanceError(spec.files, f"data file absent: {', '.join(absent)}", absent=tuple(absent))
    total = sum(link.bytes for link in links)
    if total > spec.max_bytes:
        raise InstanceError(spec.files, f"data files of {total} bytes, over by_reference.max_bytes")
    return tuple(links)


def _link(name: str, source: Path) -> InstanceLink:
    info = source.stat()
    digest = _digest(str(source), info.st_size, info.st_mtime_ns)
    return InstanceLink(name=name, source=str(source), bytes=info.st_size, sha256=digest)


@functools.lru_cache(maxsize=4096)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a data file, remembered per (path, size, mtime) for the process: a benchmark of
    116 MB loaded twice is hashed once."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
