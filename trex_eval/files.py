"""Small file helpers shared by layers that must not import each other (no trex_eval imports)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
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


def ensure_private_folder(folder: Path) -> None:
    """Create ``folder`` (0700, parents too) where it is missing, and refuse one that is not this
    user's own: the check every store of derived facts makes before it trusts a folder.

    Raises:
        OSError: it cannot be created, is not a folder, or is owned by another user or writable
            by its group or others (PermissionError).
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = os.stat(folder)
    if not stat.S_ISDIR(found.st_mode):
        raise NotADirectoryError(f"{folder} is not a folder")
    if found.st_uid != os.geteuid() or found.st_mode & 0o022:
        raise PermissionError(
            f"{folder} is not this user's own (owner uid {found.st_uid}, mode "
            f"{stat.S_IMODE(found.st_mode):o}): others could write entries"
        )


def write_private_atomically(path: Path, data: bytes) -> None:
    """``data`` as the file ``path`` (0600): written to a temporary file of its folder (created
    0700 where missing; named ``.<name>.<pid>.<random>.tmp``), then renamed over ``path``, so that
    no reader sees part of it. Not synced: a crash may leave a truncated entry, which a reader must
    reject.

    Raises:
        OSError: the folder or file cannot be written.
    """
    path.parent.mkdir(mode=0o700, exist_ok=True)
    temporary = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
