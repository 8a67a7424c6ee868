"""The harness version, in a module of its own so that any layer can read it without importing the
:mod:`trex_eval` facade (whose type-checking imports reach the top layers)."""

from __future__ import annotations

__version__ = "0.1.0"
