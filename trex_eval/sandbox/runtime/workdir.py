"""A job's directories: written before the fork, the requested files collected after it, and
everything the job left wiped before the next one."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from typing import Any

from .contract import PROGRAM_FILE, WORKDIR_TOKEN

_MAX_COLLECTED_FILES = 100
_MAX_COLLECTED_BYTES = 64 << 20


def prepare(request: dict[str, Any], workdir: str, tmpdir: str, uid: int | None) -> str:
    """Create the job's working and temporary directories, write its files and its program
    (owned by ``uid`` when set); the program's text, with the working directory filled in."""
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
    source = str(request["code"]).replace(WORKDIR_TOKEN, workdir)
    program = os.path.join(workdir, PROGRAM_FILE)
    with open(program, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(source)
    created.append(program)
    if uid is not None:
        for path in created:
            os.chown(path, uid, uid)
    return source


def wipe(workdir: str, tmpdir: str, directories: tuple[str, ...], keep: tuple[str, ...]) -> None:
    """Remove the job's directories and empty ``directories`` (but for the entries in ``keep``)."""
    _remove(workdir)
    _remove(tmpdir)
    for directory in directories:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(directory, entry)
            if path not in keep:
                _remove(path)


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


def collect_files(workdir: str, patterns: list[str], *, limit_bytes: int) -> list[dict[str, Any]]:
    """Regular files under ``workdir`` matching ``patterns`` (symlinks and specials ignored), in
    the order they were last written (graders take the last one as the program's final model)."""
    matchers = [glob_regex(pattern) for pattern in patterns]
    found: list[dict[str, Any]] = []
    total = 0
    for directory, subdirectories, names in os.walk(workdir):
        subdirectories.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, workdir).replace(os.sep, "/")
            if relative == PROGRAM_FILE or not any(matcher.match(relative) for matcher in matchers):
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    continue
                size = info.st_size
                data = os.pread(fd, min(size, limit_bytes, max(0, _MAX_COLLECTED_BYTES - total)), 0)
            finally:
                os.close(fd)
            total += len(data)
            found.append(
                {
                    "name": relative,
                    "content": data.decode("utf-8", "surrogateescape"),
                    "size": size,
                    "truncated": len(data) < size,
                    "mtime_ns": info.st_mtime_ns,
                }
            )
            if len(found) >= _MAX_COLLECTED_FILES:
                break
        else:
            continue
        break
    found.sort(key=lambda item: (item["mtime_ns"], item["name"]))
    for item in found:
        del item["mtime_ns"]
    return found


def _remove(path: str) -> None:
    def retry(function: Any, target: str, _: Any) -> None:
        # A program may have taken the write bit off its own folders; give it back, but only
        # inside the tree being removed (never on /tmp itself, which jobs must keep entering).
        try:
            parent = os.path.dirname(target)
            if parent.startswith(path + os.sep) or parent == path:
                os.chmod(parent, 0o700)
            os.chmod(target, 0o700)
            function(target)
        except OSError:
            pass

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=retry)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)
