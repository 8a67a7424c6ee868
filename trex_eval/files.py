"""Small file helpers shared by layers that must not import each other (no trex_eval imports)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

_CHUNK = 1 << 16


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


SAFE_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (~10x faster than the pure-Python one; the
same documents and error marks), else PyYAML's own."""


def load_yaml(text: str) -> Any:
    """``text`` as a YAML document, read by :data:`SAFE_YAML_LOADER` (``yaml.YAMLError`` if invalid)."""
    return yaml.load(text, Loader=SAFE_YAML_LOADER)
