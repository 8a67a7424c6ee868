"""The instance store: data files handed to programs by reference, staged once and read-only.

A benchmark whose instances carry large data files (MIPLIB-NL: CSV files of up to tens of MB,
116 MB in all) names them as :class:`~trex_eval.records.InstanceLink` records instead of inlining
their text. Each is copied once into ``<cache>/instances/<sha256[:2]>/<sha256>`` (content
addressed: a file shared by several instances or runs is stored once), mode 0444, and every
sandbox pool binds that folder read-only into its workers' view. A job then gets a symbolic link
per data file in its working directory, pointing into the store: no copy per job, no write.

The store holds only what benchmarks link, which are data files, never labels or reference
programs. It is a copy rather than a hard link of the benchmark's file: at the weaker isolation
levels a program can write what its uid can, and a hard link would let it change the upstream
copy itself. For the same reason a pool at the ``rlimits`` level (programs run as the harness's
user, no read-only view) never uses the persistent store: it stages into a private store in its
own scratch folder, removed with the pool, so a program that rewrites a staged file reaches no
other run (the persistent store trusts a staged file of the right size, as only the harness can
write it where the store is bound read-only).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from ..errors import SandboxError
from ..records import InstanceLink
from .job import Job

MAX_LINK_BYTES = 1 << 30
"""The largest data file staged (1 GiB; MIPLIB-NL's largest is 32 MB). A larger one is refused."""

MAX_JOB_LINK_BYTES = 4 << 30
"""The most bytes one job may be given by reference (4 GiB)."""

_CHUNK = 1 << 20
_lock = threading.Lock()


def store_root() -> Path:
    """The instance store, ``<cache>/instances`` (``TREX_CACHE_DIR`` moves it); not created."""
    from .. import config

    return config.cache_dir() / "instances"


def ensure_store() -> Path:
    """The store, created readable by every uid (jobs may run under one of their own)."""
    root = store_root().absolute()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    return root


def workdir_entries(job: Job, *, root: Path | None = None) -> dict[str, dict[str, str]]:
    """What a worker puts in the job's working directory: ``files`` (relative path -> text) and
    ``links`` (relative path -> staged file in ``root``, default the persistent store; see
    :func:`stage`)."""
    return {"files": dict(job.files), "links": stage(job.links, root=root)}


def stage(links: tuple[InstanceLink, ...], *, root: Path | None = None) -> dict[str, str]:
    """``name -> staged path`` for each link, copying into the store (``root``, default the
    persistent one, :func:`ensure_store`) what it lacks.

    Raises:
        SandboxError: a file over :data:`MAX_LINK_BYTES`, links over :data:`MAX_JOB_LINK_BYTES`
            in all, a source that is gone, or one whose content no longer has the digest it had
            when the benchmark was loaded (reload it, or ``trex-eval data verify``).
    """
    total = sum(link.bytes for link in links)
    if total > MAX_JOB_LINK_BYTES:
        raise SandboxError(
            f"a job's data files total {total} bytes, over the {MAX_JOB_LINK_BYTES}-byte bound",
            where="sandbox instance store",
            hint="give such an instance fewer or smaller files (the bound is MAX_JOB_LINK_BYTES)",
        )
    if not links:
        return {}
    if root is not None:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
    store = ensure_store() if root is None else root
    return {link.name: str(_staged(store, link)) for link in links}


def _staged(root: Path, link: InstanceLink) -> Path:
    if link.bytes > MAX_LINK_BYTES:
        raise SandboxError(
            f"data file {link.source} has {link.bytes} bytes, over the {MAX_LINK_BYTES}-byte bound",
            where="sandbox instance store",
            hint="such a file cannot be given to programs by reference (MAX_LINK_BYTES)",
        )
    target = root / link.sha256[:2] / link.sha256
    if target.is_file() and target.stat().st_size == link.bytes:
        return target
    with _lock:
        if target.is_file() and target.stat().st_size == link.bytes:
            return target
        target.parent.mkdir(mode=0o755, exist_ok=True)
        target.parent.chmod(0o755)
        handle, partial = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
        try:
            digest = hashlib.sha256()
            with open(link.source, "rb") as source, os.fdopen(handle, "wb") as out:
                for chunk in iter(lambda: source.read(_CHUNK), b""):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != link.sha256:
                raise SandboxError(
                    f"data file {link.source} changed since its benchmark was loaded (sha256 "
                    f"{digest.hexdigest()[:12]}, expected {link.sha256[:12]})",
                    where="sandbox instance store",
                    hint="run `trex-eval data verify`, then load the benchmark again",
                )
            os.chmod(partial, 0o444)
            os.replace(partial, target)
        except OSError as exc:
            raise SandboxError(
                f"cannot stage data file {link.source}: {exc.strerror or exc}",
                where="sandbox instance store",
                hint="check that the benchmark's data files exist (`trex-eval data verify`)",
            ) from exc
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    return target
