"""trex-eval's benchmarks as lm-evaluation-harness tasks (docs/lm-eval.md).

``tasks/`` holds one task config per shipped benchmark (``trex_nl4opt``, ``trex_b4o_feasible``,
...) and one group per suite (``trex_t_rex``, ``trex_sirl``, ``trex_orlm``, ``trex_all``), as
package data; lm-eval finds them with ``--include_path $(python -m trex_eval.integrations.lm_eval
--path)``. Their hooks (:mod:`.hooks`) read the pinned data through trex-eval's loader, render
``trex-eval run``'s prompts and grade every response with the reward scorer, so a verdict is the
one ``trex-eval run`` gives the same completion. Importing this package imports nothing of
lm-eval.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["tasks_dir"]


def tasks_dir() -> Path:
    """The folder of the task configs, for lm-eval's ``--include_path`` (or
    ``TaskManager(include_path=...)``)."""
    return Path(__file__).resolve().parent / "tasks"
