"""Where a managed server's weights come from, and which revision of them it loaded.

``BackendSpec.model`` of a served backend is a local folder or a hub id. A hub id downloads from
the Hugging Face hub (default) or from ModelScope (option ``hub: modelscope``: vLLM reads
``VLLM_USE_MODELSCOPE=True`` in the server's environment and fetches through the ``modelscope``
package, which must be installed in vLLM's environment). ``revision`` pins a branch, tag or
commit (``vllm serve --revision``).

The revision actually loaded is recorded in the run manifest (:func:`resolved_revision`): a
40-hex pin is its own answer; otherwise the commit the hub cache's ref points at after the
server has loaded the model (Hugging Face: ``<HF_HUB_CACHE>/models--org--name/refs/<rev>``,
default ``main``; ModelScope: the ``.mv`` revision file of ``<MODELSCOPE_CACHE>/models/org/name``
where that version of ``modelscope`` writes one). ``None`` when no cache entry says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from trex_eval import config

Hub = Literal["huggingface", "modelscope"]

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


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


def cached_snapshot(source: ModelSource) -> Path | None:
    """The folder holding the model's files on this machine, if any (local, or a hub cache)."""
    if source.kind == "local":
        return Path(source.model)
    if source.kind == "modelscope":
        folder = modelscope_cache_dir() / "models" / source.model
        return folder if folder.is_dir() else None
    commit = resolved_revision(source)
    repo = hf_cache_dir() / ("models--" + source.model.replace("/", "--"))
    snapshot = repo / "snapshots" / commit if commit else None
    return snapshot if snapshot is not None and snapshot.is_dir() else None


def resolved_revision(source: ModelSource) -> str | None:
    """The commit the server loaded (see the module docstring), or ``None``."""
    if source.kind == "local":
        return None
    if source.revision and _COMMIT.match(source.revision):
        return source.revision
    if source.kind == "modelscope":
        marker = modelscope_cache_dir() / "models" / source.model / ".mv"
        return _read_first_line(marker)
    ref = (
        hf_cache_dir() / ("models--" + source.model.replace("/", "--")) / "refs" / (source.revision or "main")
    )
    commit = _read_first_line(ref)
    return commit if commit and _COMMIT.match(commit) else None


def _read_first_line(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text.splitlines()[0].strip() if text else None
