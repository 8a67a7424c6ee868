"""Per-run resource limits of the sandbox (a value object; every field has a documented default).

:class:`SandboxLimits` is defined in :mod:`trex_eval.records` (the run store records it and must
not depend on the sandbox) and re-exported here.
"""

from __future__ import annotations

from ..records import SandboxLimits

__all__ = ["SandboxLimits"]
