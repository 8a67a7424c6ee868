"""The pool's scratch directory on the host: made at start, removed at close, and removed later
for a harness that was killed before it could (its ``owner`` file names a process that is gone)."""

from __future__ import annotations

import logging
import os
import tempfile

from .runtime.workdir import CleanError, remove_tree

logger = logging.getLogger("trex_eval.sandbox")

SCRATCH_PREFIX = "trex-sandbox-"
"""Scratch directories are ``<tmp>/trex-sandbox-<owner pid>-<random>``."""
OWNER_FILE = "owner"
"""In each scratch directory: the owner's pid and start time (``/proc/<pid>/stat`` field 22)."""


def _owner_stamp(pid: int) -> str | None:
    """``"<pid> <start time>"`` of a live process, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return f"{pid} {fields[19]}"
    except (OSError, IndexError):
        return None


def remove_stale_scratch(directory: str | None = None) -> list[str]:
    """Remove the scratch directories (under ``directory``, default the temporary directory) of
    harnesses that are gone (killed with SIGKILL, say): only this user's, only those whose
    ``owner`` file names a process that no longer exists (or a pid since reused). Directories
    without an owner file are left alone. The paths removed."""
    base = directory or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(SCRATCH_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not entry.is_dir(follow_symlinks=False) or info.st_uid != os.getuid():
                continue
            with open(os.path.join(entry.path, OWNER_FILE), encoding="utf-8") as handle:
                stamp = handle.read(200).strip()
            pid = int(stamp.split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if pid == os.getpid() or _owner_stamp(pid) == stamp:
            continue
        try:
            remove_tree(entry.path)
        except CleanError as error:
            logger.warning("sandbox: could not remove a stale scratch directory: %s", error)
            continue
        removed.append(entry.path)
    return removed


def _remove_quietly(path: str) -> None:
    try:
        remove_tree(path)
    except CleanError as error:
        logger.warning("sandbox: could not remove the scratch directory: %s", error)


def _kept_under_tmp(command: tuple[str, ...]) -> list[str]:
    """Top-level ``/tmp`` entries that hold mounts of the sandbox itself (read-only binds of an
    interpreter living under ``/tmp``, masks over hidden directories there): the worker's wipe
    between jobs must leave them alone."""
    kept = []
    for index, word in enumerate(command[:-1]):
        target = (
            command[index + 2]
            if word in ("--ro-bind", "--symlink") and index + 2 < len(command)
            else command[index + 1]
        )
        if word in ("--ro-bind", "--symlink", "--tmpfs", "--dir") and target.startswith("/tmp/"):
            kept.append("/tmp/" + target.split("/")[2])
    return sorted(set(kept))
