"""Locations of the files trex-eval ships: benchmark definitions, prompt templates, presets.

In a source checkout (or an editable install) they are the top-level ``benchmarks/`` and
``prompts/`` folders; in a wheel they are packaged under ``trex_eval/_assets/``. Callers never
build these paths themselves.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def _asset_dir(name: str) -> Path:
    packaged = _PACKAGE / "_assets" / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent / name


def benchmarks_dir() -> Path:
    """Folder holding the shipped ``*.yaml`` benchmark definitions."""
    return _asset_dir("benchmarks")


def prompts_dir() -> Path:
    """Folder holding the project's jinja2 prompt templates and ``sets.yaml``."""
    return _asset_dir("prompts")


def package_file(name: str) -> Path:
    """A data file at the root of the ``trex_eval`` package (``models.yaml``)."""
    return _PACKAGE / name
