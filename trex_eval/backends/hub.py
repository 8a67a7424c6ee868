"""Where a managed server's weights come from, and which revision of them it loaded.

``BackendSpec.model`` of a served backend is a local folder or a hub id. A hub id downloads from
the Hugging Face hub (default) or from ModelScope (option ``hub: modelscope``: vLLM reads
``VLLM_USE_MODELSCOPE=True`` in the server's environment and fetches through the ``modelscope``
package, which must be installed in vLLM's environment). ``revision`` pins a branch, tag or
commit (``vllm serve --revision``).

What was loaded is recorded in the run manifest (:func:`revision_facts`, read once the server
has loaded the model, so that the cache then holds what it downloaded):

Hugging Face (``huggingface_hub``'s cache: ``<HF_HUB_CACHE>/models--org--name/``)
    ``refs/<revision>`` (default ``main``) holds the commit the revision resolved to, and
    ``snapshots/<commit>/`` the files. ``commit`` is that ref's content; a 40-hex pin is its
    own answer (the hub writes no ref for a commit).
ModelScope (the ``modelscope`` package's cache: ``<MODELSCOPE_CACHE or ~/.cache/modelscope/hub>``)
    One folder per model, ``models/<org>/<name>`` (``.`` in the name written ``___``; older
    releases: ``<org>/<name>`` directly under the cache root, or under its ``hub/``), holding
    the files themselves and three bookkeeping files: ``.mv``, the branch or tag downloaded
    (``Revision:<name>,CreatedAt:<epoch>``, or the bare name); ``.msc``, a pickled list of
    ``{"Path", "Revision"}`` with the commit id of every cached file; ``.mdl``, the model id.
    ModelScope records no commit for the repository as a whole: ``commit`` is a 40-hex pin or
    ``.mv`` name, else the one commit every cached file carries when they agree; else ``None``,
    and the manifest keeps the branch or tag, its creation time and the files' commits
    (``.msc`` is read with an unpickler that refuses every class, so it can run no code).

``None`` everywhere when no cache entry says (a local folder, a cache the server does not
share, ``--download-dir``): the manifest then says ``revision_resolved: null``, never a guess.
"""

from __future__ import annotations

import io
import pickle
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from trex_eval import config

Hub = Literal["huggingface", "modelscope"]

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_MAX_FILE_COMMITS = 8
_MAX_MSC_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ModelSource:
    """Where the server gets the weights: ``kind`` is ``local``, ``huggingface`` or ``modelscope``."""

    kind: str
    model: str
    revision: str | None

    @property
    def environment(self) -> dict[str, str]:
        """Variables the server process needs for this source."""
        return {"VLLM_USE_MODELSCOPE": "True"} if self.kind == "modelscope" else {}

    def label(self) -> str:
        """One line for ``--dry-run`` and the manifest."""
        pin = f" @ {self.revision}" if self.revision else ""
        if self.kind == "local":
            return f"local folder {self.model}"
        if self.kind == "modelscope":
            return f"ModelScope {self.model}{pin} (https://www.modelscope.cn/models/{self.model})"
        return f"Hugging Face {self.model}{pin} (https://huggingface.co/{self.model})"


@dataclass(frozen=True)
class RevisionFacts:
    """What the hub cache says about the revision of a model (see the module docstring).

    Attributes:
        commit: the commit loaded (40 hex), or ``None`` when nothing says.
        ref: the branch or tag the cache says it downloaded (ModelScope's ``.mv``; Hugging
            Face: the ref read), when known.
        created_at: ModelScope's creation time of that branch or tag (epoch seconds, as written).
        file_commits: ModelScope: the distinct commit ids of the cached files (at most 8).
        read_from: the cache file the commit or ref was read from.
    """

    commit: str | None = None
    ref: str | None = None
    created_at: str | None = None
    file_commits: tuple[str, ...] = field(default_factory=tuple)
    read_from: str | None = None

    def facts(self) -> dict[str, object]:
        """JSON-safe form for the manifest."""
        return {
            "commit": self.commit,
            "ref": self.ref,
            "created_at": self.created_at,
            "file_commits": list(self.file_commits),
            "read_from": self.read_from,
        }


def model_source(model: str, *, hub: Hub | None, revision: str | None) -> ModelSource:
    """The source of ``model``: a local folder when one exists at that path, else the hub."""
    local = Path(model).expanduser()
    if local.exists() or model.startswith(("/", "./", "../", "~")):
        return ModelSource(kind="local", model=str(local), revision=None)
    return ModelSource(kind=hub or "huggingface", model=model, revision=revision)


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache``)."""
    explicit = config.getenv("HF_HUB_CACHE")
    if explicit:
        return Path(explicit)
    home = config.getenv("HF_HOME")
    return Path(home) / "hub" if home else Path.home() / ".cache" / "huggingface" / "hub"


def modelscope_cache_dir() -> Path:
    """The ModelScope cache (``MODELSCOPE_CACHE``, else ``~/.cache/modelscope/hub``)."""
    explicit = config.getenv("MODELSCOPE_CACHE")
    return Path(explicit) if explicit else Path.home() / ".cache" / "modelscope" / "hub"


def modelscope_model_dir(model: str) -> Path | None:
    """The cached folder of ModelScope model ``org/name``, in any layout the package has used."""
    root = modelscope_cache_dir()
    owner, _, name = model.partition("/")
    masked = name.replace(".", "___")
    candidates = (
        root / "models" / owner / masked,
        root / "models" / owner / name,
        root / owner / masked,
        root / owner / name,
        root / "hub" / owner / masked,
        root / "hub" / owner / name,
    )
    return next((folder for folder in candidates if folder.is_dir()), None)


def _hf_repo(model: str) -> Path:
    return hf_cache_dir() / ("models--" + model.replace("/", "--"))


def cached_snapshot(source: ModelSource) -> Path | None:
    """The folder holding the model's files on this machine, if any (local, or a hub cache)."""
    if source.kind == "local":
        return Path(source.model)
    if source.kind == "modelscope":
        return modelscope_model_dir(source.model)
    commit = resolved_revision(source)
    snapshot = _hf_repo(source.model) / "snapshots" / commit if commit else None
    return snapshot if snapshot is not None and snapshot.is_dir() else None


def resolved_revision(source: ModelSource) -> str | None:
    """The commit the server loaded (see the module docstring), or ``None``."""
    return revision_facts(source).commit


def revision_facts(source: ModelSource) -> RevisionFacts:
    """What the cache says about the revision of ``source`` (see the module docstring)."""
    if source.kind == "local":
        return RevisionFacts()
    pinned = source.revision if source.revision and _COMMIT.match(source.revision) else None
    if source.kind == "modelscope":
        facts = _modelscope_facts(source.model)
        if pinned is not None:
            return replace(facts, commit=pinned, read_from="the revision option (a commit)")
        return facts
    if pinned is not None:
        return RevisionFacts(commit=pinned, read_from="the revision option (a commit)")
    ref_name = source.revision or "main"
    ref = _hf_repo(source.model) / "refs" / ref_name
    commit = _read_first_line(ref)
    if commit and _COMMIT.match(commit):
        return RevisionFacts(commit=commit, ref=ref_name, read_from=str(ref))
    return RevisionFacts()


def _modelscope_facts(model: str) -> RevisionFacts:
    folder = modelscope_model_dir(model)
    if folder is None:
        return RevisionFacts()
    ref, created_at = _parse_model_version(_read_first_line(folder / ".mv"))
    file_commits = _file_commits(folder / ".msc")
    commit: str | None = None
    read_from: str | None = None
    if ref is not None and _COMMIT.match(ref):
        commit, read_from = ref, str(folder / ".mv")
    elif len(file_commits) == 1 and _COMMIT.match(file_commits[0]):
        commit, read_from = file_commits[0], str(folder / ".msc")
    elif ref is not None:
        read_from = str(folder / ".mv")
    return RevisionFacts(
        commit=commit,
        ref=ref,
        created_at=created_at,
        file_commits=file_commits[:_MAX_FILE_COMMITS],
        read_from=read_from,
    )


def _parse_model_version(text: str | None) -> tuple[str | None, str | None]:
    """``Revision:<name>,CreatedAt:<epoch>`` (or the bare name) -> (name, created_at)."""
    if not text:
        return None, None
    if not text.startswith("Revision:"):
        return text, None
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields.get("Revision") or None, fields.get("CreatedAt") or None


class _DataOnlyUnpickler(pickle.Unpickler):
    """Lists, dicts, strings and numbers only: any class or function in the stream is refused."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"refused {module}.{name}")


def _file_commits(path: Path) -> tuple[str, ...]:
    """The distinct ``Revision`` values of ModelScope's ``.msc`` file list, in its order; empty
    when the file is absent, too large or not the expected shape."""
    try:
        if path.stat().st_size > _MAX_MSC_BYTES:
            return ()
        entries = _DataOnlyUnpickler(io.BytesIO(path.read_bytes())).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, LookupError, AttributeError):
        return ()
    if not isinstance(entries, list):
        return ()
    seen: dict[str, None] = {}
    for entry in entries:
        revision = entry.get("Revision") if isinstance(entry, dict) else None
        if isinstance(revision, str) and revision:
            seen.setdefault(revision, None)
    return tuple(seen)


def _read_first_line(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text.splitlines()[0].strip() if text else None
