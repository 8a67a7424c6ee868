"""Machine load for tests whose verdicts must not depend on it: ``burning(per_core=8)`` runs 8 busy
processes per core (load ~16 on the 2-core machines, as on a shared RL node) for the length of a
``with`` block, and ends them after it, whatever happened inside."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_BURN = "import os\nos.nice(0)\nwhile True:\n    pass\n"


@contextmanager
def burning(*, per_core: int = 8) -> Iterator[int]:
    """``per_core`` busy processes per core (at the harness's own priority) while the block runs;
    yields how many were started."""
    count = per_core * (os.cpu_count() or 1)
    burners = [
        subprocess.Popen([sys.executable, "-c", _BURN], stdin=subprocess.DEVNULL, start_new_session=True)
        for _ in range(count)
    ]
    try:
        yield count
    finally:
        for burner in burners:
            burner.send_signal(signal.SIGKILL)
        for burner in burners:
            burner.wait()
