"""Process-level configuration: the only module that reads ``os.environ``.

Everything else receives values from here (or from CLI flags) as arguments, so that the pure
core (extraction, grading, metrics) never depends on the environment.

Environment variables understood by trex-eval:

``TREX_DATA_DIR``
    Benchmark data root (the folder that holds ``data/`` and ``evaluation/``).
``TREX_CACHE_DIR``
    Where downloaded data and assembled local models go (default: the platform user cache
    dir + ``trex-eval``).
``TREX_CONFIG_DIR``
    Where a user ``models.yaml`` is looked up (default: the platform user config dir).
``TREX_RESOLVE_STORE``
    Folder of the persistent store of re-solve results (default: the cache root +
    ``resolves``); ``off`` disables it (:mod:`trex_eval.verify.store`).
``TREX_START_FACTS``
    Folder where a sandbox pool's start keeps what it derived about this installation (the
    solver licence report, the site-packages view) for the next command (default: the cache root
    + ``start-facts``); ``off`` disables it (:mod:`trex_eval.sandbox.start_facts`).
``TREX_VLLM_EXECUTABLE``
    A ``vllm`` executable to start (e.g. from another virtualenv); default: ``vllm`` on PATH.
``TREX_PROGRESS_INTERVAL_S``
    Seconds between two plain progress lines of a benchmark when stderr is not a terminal
    (default 30; :mod:`trex_eval.run.progress`).
API keys
    Read only under the variable name a model preset names (``api_key_env``), never stored.
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``MODEL_NAME``
    The reference harness's endpoint, key and model, for the ``openai/<model>`` and
    ``openai-compatible`` model specs (:mod:`trex_eval.backends.specs`).
``CUDA_VISIBLE_DEVICES``
    The GPUs a managed server may use; unset: every GPU ``nvidia-smi`` lists
    (:mod:`trex_eval.backends.gpus`).
``HF_HUB_CACHE``, ``HF_HOME``, ``MODELSCOPE_CACHE``
    Where the hubs cache models, read to record the revision a server loaded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import platformdirs

APP_NAME = "trex-eval"


def getenv(name: str) -> str | None:
    """Value of environment variable ``name``, or ``None`` when unset or empty."""
    value = os.environ.get(name)
    return value if value else None


def getenv_raw(name: str) -> str | None:
    """Value of environment variable ``name`` as set, empty included; ``None`` when unset
    (``CUDA_VISIBLE_DEVICES=""`` means "no GPU", not "unset")."""
    return os.environ.get(name)


_SET_HERE: dict[str, str] = {}
"""Variables this process set for itself (:func:`single_threaded_blas`), which children do not get."""


def single_threaded_blas() -> None:
    """Give this process's BLAS one thread where the user chose nothing (``OPENBLAS_NUM_THREADS``;
    call before NumPy loads). The harness does no large linear algebra, and OpenBLAS's pool of
    idle threads spins ~0.1 CPU s when NumPy loads, in every command. Children started with
    :func:`environment` do not inherit the setting."""
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = _SET_HERE["OPENBLAS_NUM_THREADS"] = "1"


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of this process's environment with ``extra`` laid over it (for a child server),
    without what :func:`single_threaded_blas` set for this process alone."""
    inherited = {key: value for key, value in os.environ.items() if _SET_HERE.get(key) != value}
    return {**inherited, **(extra or {})}


def cache_dir() -> Path:
    """User cache root for trex-eval (not created)."""
    override = getenv("TREX_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP_NAME))


def config_dir() -> Path:
    """User configuration root for trex-eval (not created)."""
    override = getenv("TREX_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


START_FACT_KINDS = ("licence-", "site-entries-")
"""File-name prefixes of the start facts' entries (:mod:`trex_eval.sandbox.start_facts`)."""
_store_withdrawn: list[str] = []
"""Why this process no longer uses the store of re-solve results (:func:`withdraw_resolve_store`)."""


def withdraw_resolve_store(reason: str) -> Path | None:
    """Stop using the store of re-solve results in this process, for good, and empty it (it is a
    cache), the start facts (:func:`start_facts_dir`) with it; returns the store's folder emptied,
    if any. For a process whose programs can write the folder
    (a sandbox at the ``rlimits`` level runs them as the harness's user): no entry such a program
    could have forged is read, nor anything written later. A folder another process trusts again
    may hold what such a program left after this: the isolation report says to run untrusted
    programs under bubblewrap."""
    store, facts = resolve_store_dir(), start_facts_dir()
    if not _store_withdrawn:
        _store_withdrawn.append(reason)
    if store is not None:
        shutil.rmtree(store, ignore_errors=True)
    if facts is not None:
        _empty_start_facts(facts)
    return store


def _empty_start_facts(folder: Path) -> None:
    """Delete the start facts' own files in ``folder``, then the folder where that empties it
    (``TREX_START_FACTS`` may name a folder that holds other things)."""
    with contextlib.suppress(OSError):
        for item in os.scandir(folder):
            own = item.name.endswith(".json") and item.name.startswith(START_FACT_KINDS)
            if own or (item.name.startswith(".") and item.name.endswith(".tmp")):
                with contextlib.suppress(OSError):
                    os.unlink(item.path)
    with contextlib.suppress(OSError):
        folder.rmdir()


def resolve_store_withdrawn() -> str | None:
    """Why :func:`withdraw_resolve_store` stopped the store in this process, or None."""
    return _store_withdrawn[0] if _store_withdrawn else None


def resolve_store_dir() -> Path | None:
    """Folder of the persistent store of re-solve results (not created): ``TREX_RESOLVE_STORE``,
    else :func:`cache_dir` + ``resolves``; ``None`` when ``TREX_RESOLVE_STORE`` is ``off`` or
    this process withdrew the store (:func:`withdraw_resolve_store`)."""
    if _store_withdrawn:
        return None
    override = getenv("TREX_RESOLVE_STORE")
    if override is not None and override.strip().lower() == "off":
        return None
    return Path(override).expanduser() if override else cache_dir() / "resolves"


def start_facts_dir() -> Path | None:
    """Folder of the facts a sandbox pool's start keeps between commands (not created):
    ``TREX_START_FACTS``, else :func:`cache_dir` + ``start-facts``; ``None`` when it is ``off`` or
    this process withdrew the store of re-solve results (the same programs could write both)."""
    if _store_withdrawn:
        return None
    override = getenv("TREX_START_FACTS")
    if override is not None and override.strip().lower() == "off":
        return None
    return Path(override).expanduser() if override else cache_dir() / "start-facts"


def data_dir_from_env() -> Path | None:
    """``TREX_DATA_DIR`` as a path, if set."""
    value = getenv("TREX_DATA_DIR")
    return Path(value) if value else None


def vllm_executable() -> str:
    """The ``vllm`` executable to launch (``TREX_VLLM_EXECUTABLE`` or ``vllm`` on PATH)."""
    return getenv("TREX_VLLM_EXECUTABLE") or "vllm"


def progress_interval() -> str | None:
    """``TREX_PROGRESS_INTERVAL_S`` as set (parsed and checked by :mod:`trex_eval.run.progress`)."""
    return getenv("TREX_PROGRESS_INTERVAL_S")
