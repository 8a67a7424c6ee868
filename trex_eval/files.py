"""Small file helpers shared by layers that must not import each other (no trex_eval imports)."""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 16


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
