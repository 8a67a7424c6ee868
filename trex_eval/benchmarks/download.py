"""Fetch an archive (``https://``, ``http://`` or ``file://``) and install the files a manifest
lists from it, each checked against its sha256, atomically: the destination either holds the
complete verified tree or is left as it was. Used by ``trex-eval data pull`` for the T-Rex data
and the field's sources."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Protocol

from trex_eval.errors import DataError

CHUNK = 1 << 16


class ArchiveManifest(Protocol):
    """What an archive must hold: ``files`` maps each relative path to its sha256,
    ``member_to_relpath`` each archive member to that path, ``optional_members`` are kept
    unchecked where present; ``commit`` names the snapshot it is pinned to."""

    @property
    def commit(self) -> str: ...

    @property
    def files(self) -> Mapping[str, str]: ...

    @property
    def member_to_relpath(self) -> dict[str, str]: ...

    @property
    def optional_members(self) -> dict[str, str]: ...


ProgressCallback = Callable[[int, int | None], None]
"""Called with (bytes downloaded so far, total bytes or None) while downloading."""


def remove_stale_staging(dest: Path) -> None:
    # A pull killed with SIGKILL leaves its staging folder behind; an hour is far longer than
    # any real download, so older ones are garbage.
    cutoff = time.time() - 3600
    for stale in dest.parent.glob(f".{dest.name}.*-*"):
        if stale.is_dir() and stale.stat().st_mtime < cutoff:
            shutil.rmtree(stale, ignore_errors=True)


def download(
    url: str,
    target: Path,
    connect_timeout_s: float,
    read_timeout_s: float,
    progress: ProgressCallback | None,
    hint: str,
) -> None:
    if url.startswith("file://"):
        copy_local(url, target, progress, hint)
        return
    import httpx  # here: every run reads this module's data facts, few ever download

    timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
    try:
        with (
            httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response,
            target.open("wb") as out,
        ):
            if response.status_code != 200:
                raise DataError(f"downloading {url} failed: HTTP {response.status_code}", hint=hint)
            total_header = response.headers.get("content-length")
            total = int(total_header) if total_header and total_header.isdigit() else None
            done = 0
            for chunk in response.iter_bytes(CHUNK):
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
            if total is not None and done != total:
                raise DataError(f"download of {url} was cut short ({done} of {total} bytes)", hint=hint)
    except httpx.HTTPError as exc:
        raise DataError(f"cannot download {url}: {exc or type(exc).__name__}", hint=hint) from exc


def copy_local(url: str, target: Path, progress: ProgressCallback | None, hint: str) -> None:
    """A ``file://`` mirror: the archive copied from the local path, with progress."""
    source = Path(url.removeprefix("file://"))
    try:
        total = source.stat().st_size
        with source.open("rb") as src, target.open("wb") as out:
            done = 0
            for chunk in iter(lambda: src.read(CHUNK), b""):
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
    except OSError as exc:
        raise DataError(f"cannot read {url}: {exc.strerror or exc}", hint=hint) from exc


def iter_members(archive: Path) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | None]]:
    with tarfile.open(archive, mode="r|gz") as tar:
        for member in tar:
            yield member, tar.extractfile(member) if member.isfile() else None


def copy_hashing(source: IO[bytes], out: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: source.read(CHUNK), b""):
        digest.update(chunk)
        out.write(chunk)
    return digest.hexdigest()


def extract_verified(archive: Path, tree: Path, manifest: ArchiveManifest, hint: str) -> None:
    """Write the manifest's members of ``archive`` under ``tree``, each checked against its sha256.

    Raises:
        DataError: the archive cannot be read, or a listed file is missing or corrupt (``hint``
            says what to do).
    """
    wanted = manifest.member_to_relpath
    optional = manifest.optional_members
    found: set[str] = set()
    corrupt: list[str] = []
    try:
        for member, stream in iter_members(archive):
            if stream is not None and member.name in optional and not (tree / optional[member.name]).exists():
                target = tree / optional[member.name]
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    copy_hashing(stream, out)
                continue
            rel = wanted.get(member.name)
            if rel is None or stream is None:
                continue
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                digest = copy_hashing(stream, out)
            found.add(rel)
            if digest != manifest.files[rel]:
                corrupt.append(rel)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DataError(f"the downloaded archive is not a readable .tar.gz: {exc}", hint=hint) from exc
    missing = sorted(set(manifest.files) - found)
    if corrupt or missing:
        lines = [f"corrupt (sha256 mismatch): {rel}" for rel in sorted(corrupt)]
        lines += [f"missing from archive: {rel}" for rel in missing]
        shown = "\n    ".join(lines[:20]) + (
            f"\n    ... and {len(lines) - 20} more" if len(lines) > 20 else ""
        )
        raise DataError(
            f"the archive does not match the pinned snapshot {manifest.commit[:12]}; "
            "nothing was installed:\n    " + shown,
            hint="retry the download; if it persists, the upstream archive changed: report it",
        )


def swap_into_place(tree: Path, dest: Path) -> None:
    if not dest.exists():
        os.replace(tree, dest)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
    os.replace(dest, retired / "previous")
    try:
        os.replace(tree, dest)
    except OSError:
        os.replace(retired / "previous", dest)
        raise
    finally:
        shutil.rmtree(retired, ignore_errors=True)
