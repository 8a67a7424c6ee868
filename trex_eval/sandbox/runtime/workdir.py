"""A job's directories: written before the fork, the requested files collected after it, and
everything the job left wiped before the next one."""

from __future__ import annotations

import os
import re
import stat
import time
from typing import Any

from .contract import PROGRAM_FILE, WORKDIR_TOKEN, CollectedFile

_MAX_COLLECTED_FILES = 100
_MAX_COLLECTED_BYTES = 64 << 20
_SCAN_MAX_DEPTH = 64
_SCAN_MAX_ENTRIES = 200_000
_SCAN_MAX_S = 10.0
_CLEAN_MAX_DEPTH = 1_000_000
_CLEAN_MAX_ENTRIES = 10_000_000
_CLEAN_MAX_S = 60.0


def prepare(request: dict[str, Any], workdir: str, tmpdir: str, uid: int | None) -> str:
    """Create the job's working and temporary directories, write its files, its links to data
    given by reference and its program (owned by ``uid`` when set; the links themselves are the
    worker's, their targets read-only); the program's text, with the working directory filled in."""
    created = [workdir, tmpdir]
    for path in created:
        os.mkdir(path, 0o700)
    for relative, text in request["files"].items():
        target = _inside(workdir, relative)
        parent = os.path.dirname(target)
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o700)
            created.extend(_parents_between(workdir, parent))
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
        created.append(target)
    # Data given by reference: a symbolic link to the read-only instance store (written by the
    # harness, bound into this view), so a large file is neither copied nor writable per job.
    for relative, target in request.get("links", {}).items():
        link = _inside(workdir, relative)
        parent = os.path.dirname(link)
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o700)
            created.extend(_parents_between(workdir, parent))
        os.symlink(target, link)
    source = str(request["code"]).replace(WORKDIR_TOKEN, workdir)
    program = os.path.join(workdir, PROGRAM_FILE)
    with open(program, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(source)
    created.append(program)
    if uid is not None:
        for path in created:
            os.chown(path, uid, uid)
    return source


def wipe(workdir: str, tmpdir: str, directories: tuple[str, ...], keep: tuple[str, ...]) -> list[str]:
    """Remove the job's directories and empty ``directories`` (but for the entries in ``keep``);
    what could not be removed (empty when all went; the worker must then not serve again)."""
    problems: list[str] = []
    paths = [workdir, tmpdir]
    for directory in directories:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        paths.extend(os.path.join(directory, entry) for entry in entries)
    for path in paths:
        if path in keep:
            continue
        try:
            remove_tree(path)
        except (CleanError, RecursionError, MemoryError) as error:
            problems.append(str(error)[:300])
    return problems


def _inside(root: str, relative: str) -> str:
    """``root/relative``; ValueError if ``relative`` is absolute or climbs out of ``root``."""
    target = os.path.normpath(os.path.join(root, relative))
    if os.path.isabs(relative) or not target.startswith(root + os.sep):
        raise ValueError(f"job file path {relative!r} leaves the working directory")
    if os.path.basename(target) == PROGRAM_FILE and os.path.dirname(target) == root:
        raise ValueError(f"job file path {relative!r} is reserved for the program")
    return target


def _parents_between(root: str, directory: str) -> list[str]:
    parents = []
    while directory != root:
        parents.append(directory)
        directory = os.path.dirname(directory)
    return parents


def glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` within a path segment, ``?`` one character, ``**/`` any number of directories."""
    parts, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            parts.append(".*")
            index += 2
        elif pattern[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(parts) + r"\Z")


def collect_files(
    workdir: str, patterns: list[str], *, limit_bytes: int, budget_bytes: int = _MAX_COLLECTED_BYTES
) -> tuple[tuple[CollectedFile, ...], dict[str, int]]:
    """Regular files under ``workdir`` matching ``patterns`` (symlinks and specials ignored), in
    the order they were last written (graders take the last one as the program's final model),
    and what was left out: ``{"files": n, "bytes": b}``.

    The newest files are kept while their total stays within ``budget_bytes`` (the newest one
    always, cut to the budget); at most ``_MAX_COLLECTED_FILES``. The scan never recurses and is
    bounded in depth, entries and time (a hostile tree is collected in part, never fatally)."""
    matchers = [glob_regex(pattern) for pattern in patterns]
    candidates: list[tuple[int, str, str, int]] = []
    for path, relative, info in _scan(workdir):
        if relative == PROGRAM_FILE or not any(matcher.match(relative) for matcher in matchers):
            continue
        candidates.append((info.st_mtime_ns, relative, path, info.st_size))
    candidates.sort()
    chosen: list[tuple[int, str, str, int]] = []
    total = 0
    budget = max(0, min(budget_bytes, _MAX_COLLECTED_BYTES))
    for candidate in reversed(candidates):
        size = min(candidate[3], limit_bytes)
        if len(chosen) >= _MAX_COLLECTED_FILES or (chosen and total + size > budget):
            continue
        chosen.append(candidate)
        total += size
    dropped = {"files": len(candidates) - len(chosen), "bytes": 0}
    kept = {candidate[1] for candidate in chosen}
    dropped["bytes"] = sum(candidate[3] for candidate in candidates if candidate[1] not in kept)
    found: list[tuple[int, str, CollectedFile]] = []
    remaining = budget
    for _, relative, path, _ in reversed(chosen):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            size = info.st_size
            data = os.pread(fd, max(0, min(size, limit_bytes, remaining)), 0)
        except OSError:
            continue
        finally:
            os.close(fd)
        remaining -= len(data)
        found.append((info.st_mtime_ns, relative, CollectedFile(relative, size, len(data) < size, data)))
    found.sort(key=lambda item: item[:2])
    return tuple(item[2] for item in found), dropped


def _scan(root: str) -> list[tuple[str, str, os.stat_result]]:
    """``(path, relative path, lstat)`` of the regular files under ``root``, walked with an
    explicit stack (no recursion), at most ``_SCAN_MAX_DEPTH`` deep, ``_SCAN_MAX_ENTRIES``
    entries and ``_SCAN_MAX_S`` seconds; unreadable directories are skipped. Nothing when ``root``
    is not a directory itself: a program that replaced its working directory with a symbolic link
    (to ``/``, say) would otherwise have the worker walk, and collect from, wherever it leads."""
    deadline = time.monotonic() + _SCAN_MAX_S
    found: list[tuple[str, str, os.stat_result]] = []
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return found
    except OSError:
        return found
    stack: list[tuple[str, str, int]] = [(root, "", 0)]
    seen = 0
    while stack:
        directory, prefix, depth = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    seen += 1
                    if seen > _SCAN_MAX_ENTRIES or time.monotonic() > deadline:
                        return found
                    relative = prefix + entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if depth < _SCAN_MAX_DEPTH:
                                stack.append((entry.path, relative + "/", depth + 1))
                            continue
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        found.append((entry.path, relative, info))
        except OSError:
            continue
    return found


class CleanError(Exception):
    """A job directory could not be removed completely (the worker must not serve again)."""


def remove_tree(path: str, *, max_entries: int = _CLEAN_MAX_ENTRIES, max_s: float = _CLEAN_MAX_S) -> None:
    """Remove ``path`` and everything under it without recursion and without long paths: one
    directory descriptor at a time (``..`` checked against the recorded parent), an explicit
    stack of names, bounded in entries, depth and time. Write and search bits a program took off
    its own folders are given back inside the tree. CleanError on anything left behind."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise CleanError(f"cannot inspect {path}: {error}") from None
    try:
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            return
        top = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return
    except OSError as error:
        raise CleanError(f"cannot remove {path}: {error}") from None
    try:
        _clear(top, os.path.basename(path), time.monotonic() + max_s, max_entries)
    except OSError as error:
        raise CleanError(f"cannot remove {path}: {error}") from None
    finally:
        os.close(top)


def _open_directory(name: str, parent: int) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent)
        return os.open(name, flags, dir_fd=parent)


def _clear(top: int, name: str, deadline: float, max_entries: int) -> None:
    current = _open_directory(name, top)
    names = [name]
    identities = [_identity(current)]
    seen = 0
    try:
        while True:
            descended = None
            with os.scandir(current) as entries:
                for entry in entries:
                    seen += 1
                    if seen > max_entries or time.monotonic() > deadline:
                        raise CleanError(f"more than {max_entries} entries, or out of time")
                    if entry.is_dir(follow_symlinks=False):
                        try:
                            os.rmdir(entry.name, dir_fd=current)
                            continue
                        except OSError:
                            pass
                        descended = entry.name
                        break
                    try:
                        os.unlink(entry.name, dir_fd=current)
                    except PermissionError:
                        os.fchmod(current, 0o700)
                        os.unlink(entry.name, dir_fd=current)
            if descended is not None:
                if len(names) >= _CLEAN_MAX_DEPTH:
                    raise CleanError(f"deeper than {_CLEAN_MAX_DEPTH} directories")
                try:
                    child = _open_directory(descended, current)
                except PermissionError:
                    os.fchmod(current, 0o700)
                    child = _open_directory(descended, current)
                os.close(current)
                current = child
                names.append(descended)
                identities.append(_identity(current))
                continue
            finished = names.pop()
            identities.pop()
            if not names:
                os.close(current)
                current = -1
                os.rmdir(finished, dir_fd=top)
                return
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
            os.close(current)
            current = parent
            if _identity(current) != identities[-1]:
                raise CleanError("a directory moved while it was being removed")
            try:
                os.rmdir(finished, dir_fd=current)
            except PermissionError:
                os.fchmod(current, 0o700)
                os.rmdir(finished, dir_fd=current)
    finally:
        if current >= 0:
            os.close(current)


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino
