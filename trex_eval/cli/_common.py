"""Consoles and helpers shared by the command modules (the options themselves: :mod:`.options`)."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

import typer
from rich.console import Console

_PIPED_WIDTH = 160
"""Width of tables written to a file or a pipe (no terminal to fit; COLUMNS still wins): wide
enough that names are not folded into a log or a CI transcript."""


def _console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(stderr=stderr, width=_PIPED_WIDTH)
    return console


out = _console()
err = _console(stderr=True)


def echo_text(text: str) -> None:
    """Print Markdown/CSV text verbatim: no wrapping or markup, so it can be piped into a file."""
    typer.echo(text.rstrip("\n"))


MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})
"""Failures of the machine rather than of the path the user gave: the command exits 1, not 2."""

_OS_HINTS = {
    errno.EACCES: "check its permissions, or choose another place with --out",
    errno.EPERM: "check its permissions, or choose another place with --out",
    errno.EROFS: "the file system is read-only: choose another place with --out",
    errno.ENOSPC: "the disk is full: free some space",
    errno.EDQUOT: "the disk quota is used up: free some space",
    errno.EIO: "the disk failed to read or write: check it (the kernel log says more)",
    errno.EFBIG: "a file reached the size limit of this process (`ulimit -f`): raise it",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "the path is a folder: give a file name",
    errno.EEXIST: "a file of that name is in the way of a folder: check the path",
}


def os_error_parts(error: OSError) -> tuple[str, str]:
    """(what failed, in words, with the path; what to do) for a file-system failure."""
    what = f"cannot use {error.filename}" if error.filename else "a file operation failed"
    reason = (error.strerror or str(error)).lower()
    hint = _OS_HINTS.get(error.errno or 0, "check the path and its permissions")
    return f"{what}: {reason}", hint


def describe_os_error(error: OSError) -> str:
    """One message for a file-system failure: the path, the reason in words (no ``[Errno N]``),
    and what to do, in the ``TrexError`` layout (``message\n  -> hint``). A failure of the machine
    (:data:`MACHINE_ERRNOS`) says to run the command again once fixed."""
    what, hint = os_error_parts(error)
    if error.errno in MACHINE_ERRNOS:
        hint += ", then run the command again"
    return f"{what}\n  -> {hint}"


def data_dir_for(benchmarks: Sequence[str], explicit: Path | None) -> Path | None:
    """The data directory when one of ``benchmarks`` reads it (downloaded on first use); otherwise
    the one in force if any, else ``None`` (user benchmarks run without the T-Rex data)."""
    from trex_eval.benchmarks import data, reads_data_dir
    from trex_eval.errors import DataError

    if reads_data_dir(benchmarks):
        return data_dir_or_pull(explicit)
    try:
        return data.resolve_data_dir(explicit)
    except DataError:
        if explicit is not None:
            raise
        return None


def data_dir_or_pull(explicit: Path | None) -> Path:
    """The data directory in force; on first use (no --data-dir, no TREX_DATA_DIR, nothing in the
    cache) the pinned data are downloaded into the cache, with a progress bar."""
    from rich.progress import BarColumn, DownloadColumn, Progress

    from trex_eval import config
    from trex_eval.benchmarks import data
    from trex_eval.errors import DataError

    try:
        return data.resolve_data_dir(explicit)
    except DataError:
        if explicit is not None or config.data_dir_from_env() is not None:
            raise
    err.print(
        "benchmark data not found: downloading the pinned SLAI-T-Rex snapshot once "
        "(13 MB of benchmark files are kept)"
    )
    with Progress("{task.description}", BarColumn(), DownloadColumn(), console=err) as progress:
        task = progress.add_task("trex data", total=None)
        try:
            path = data.pull(progress=lambda done, total: progress.update(task, completed=done, total=total))
        except DataError as error:
            # The download's own hint names `data pull`'s options (--url), which this command lacks.
            raise DataError(error.message, where=error.where, hint=_FIRST_USE_DOWNLOAD_FAILED) from None
    return data.resolve_data_dir(path)


_FIRST_USE_DOWNLOAD_FAILED = (
    "check the network (behind a proxy, set HTTPS_PROXY) and run the same command again; or fetch "
    "the pinned archive on another machine and install it with `trex-eval data pull --url "
    "http://<mirror>/<file>.tar.gz`, or point this command at an existing copy of or_benchmark_eval/ "
    "with --data-dir DIR or TREX_DATA_DIR=DIR"
)
"""Hint of a failed first-use download, said by a command that downloads the data on its way
(``run``, ``audit``, ...): it names the options those commands take and ``data pull``'s for a mirror."""
