"""What a sandbox pool's start derives about this installation, kept for the next command.

Two facts are a fixed cost of every command that grades, and both are functions of inputs a key
can name:

* the solver licence report (:mod:`.licence`): a Python start-up that imports gurobipy and coptpy
  and solves two small models, 0.35-0.45 CPU s here;
* the site-packages entries programs see (:mod:`.site_entries`): every distribution's ``RECORD``
  read, 0.25 CPU s with the development extras installed.

An entry is found by the sha256 of its key (a JSON object: the inputs the fact depends on; see the
callers) and holds only that digest and the value, never the key's text (which may name licence
settings). The folder is :func:`trex_eval.config.start_facts_dir`, outside every sandbox view, and
is trusted as the store of re-solve results is: the user's own (0700, owned by this user, neither
group nor others may write it), entries 0600 and this user's, written to a temporary file and
renamed. A process whose programs could write it (the ``rlimits`` level, as this user) withdraws
it with the store (:func:`trex_eval.config.withdraw_resolve_store`). Nothing here raises: an
unreadable, foreign or corrupt entry is a miss, a failed write is skipped; deleting the folder
costs one fresh derivation of each fact. At most :data:`KEEP_PER_KIND` entries of a kind are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config
from ..files import ensure_private_folder, write_private_atomically

logger = logging.getLogger("trex_eval.sandbox")

FORMAT = 1
"""Bumped when an entry's layout changes (older entries then miss)."""
KEEP_PER_KIND = 8
"""Entries of one kind kept (one per virtual environment, licence state or day in use). The kinds
the harness writes are :data:`trex_eval.config.START_FACT_KINDS` (what withdrawal deletes)."""
MAX_ENTRY_BYTES = 1 << 20
STALE_TMP_NS = 3600 * 10**9


def digest(key: Mapping[str, Any]) -> str:
    """The hex sha256 of ``key`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{FORMAT}\0{text}".encode()).hexdigest()


def recall(kind: str, key: Mapping[str, Any]) -> Any | None:
    """The value remembered for ``key`` under ``kind``, or None (a miss: no folder, no entry, an
    entry not this user's own or not well formed)."""
    folder = _folder(create=False)
    if folder is None:
        return None
    wanted = digest(key)
    try:
        fd = os.open(folder / _name(kind, wanted), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
            return None
        if found.st_size > MAX_ENTRY_BYTES:
            return None
        entry = json.loads(os.read(fd, MAX_ENTRY_BYTES + 1))
    except Exception:  # whatever a file holds (a nesting too deep for the parser included): a miss
        return None
    finally:
        os.close(fd)
    if not isinstance(entry, dict) or entry.get("key") != wanted or "value" not in entry:
        return None
    return entry["value"]


def remember(kind: str, key: Mapping[str, Any], value: Any) -> None:
    """Keep ``value`` (JSON) for ``key`` under ``kind``, dropping the kind's oldest entries beyond
    :data:`KEEP_PER_KIND`; skipped (logged at debug level) where the folder cannot be written."""
    folder = _folder(create=True)
    if folder is None:
        return
    wanted = digest(key)
    data = json.dumps({"key": wanted, "value": value}, separators=(",", ":")).encode()
    if len(data) > MAX_ENTRY_BYTES:
        return
    try:
        write_private_atomically(folder / _name(kind, wanted), data)
    except OSError as error:
        logger.debug("start facts: %s not kept: %s", kind, error)
        return
    _prune(folder, kind)


def _name(kind: str, wanted: str) -> str:
    return f"{kind}-{wanted}.json"


def _folder(*, create: bool) -> Path | None:
    """The folder where it is trusted (created 0700 when ``create``), else None."""
    folder = config.start_facts_dir()
    if folder is None or not (create or folder.is_dir()):
        return None
    try:
        ensure_private_folder(folder)
    except OSError as error:
        logger.debug("start facts: %s not used: %s", folder, error)
        return None
    return folder


def _prune(folder: Path, kind: str) -> None:
    """Delete the kind's entries beyond the :data:`KEEP_PER_KIND` newest, and its temporary files
    older than an hour (concurrent prunes are safe: a file already gone is skipped)."""
    entries, stale_ns = [], time.time_ns() - STALE_TMP_NS
    with contextlib.suppress(OSError):
        for item in os.scandir(folder):
            with contextlib.suppress(OSError):
                changed = item.stat(follow_symlinks=False).st_mtime_ns
                if item.name.startswith(f"{kind}-") and item.name.endswith(".json"):
                    entries.append((changed, item.path))
                elif item.name.startswith(f".{kind}-") and item.name.endswith(".tmp") and changed < stale_ns:
                    os.unlink(item.path)  # a writer that died before its rename
    for _, path in sorted(entries, reverse=True)[KEEP_PER_KIND:]:
        with contextlib.suppress(OSError):
            os.unlink(path)
