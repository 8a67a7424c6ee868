"""trex-eval: zero-shot evaluation of LLMs on Operations Research benchmarks."""

from __future__ import annotations

__version__ = "0.1.0"
