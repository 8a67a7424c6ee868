"""No record a program writes can stop a run: its result channel is its own to rewrite.

The attacks (found by a red-team pass): a program found its result channel among its descriptors,
read the nonce from its own ``start`` record, truncated the channel and wrote ``setup_failed`` (the
pool raised "the sandbox could not confine the job", which ends a run); others appended records
whose fields had the wrong types (an unhashable ``errno``, an ``error_type`` that is a number),
and the pool raised a ``TypeError`` or a validation error.
"""

from __future__ import annotations

import json

import pytest

from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxPool

FORGER = """
import json, os
record = {record}
for fd in range(3, 256):
    try:
        target = os.readlink(f"/proc/self/fd/{{fd}}")
    except OSError:
        continue
    if "trex-result" in target:
        nonce = json.loads(os.pread(fd, 4096, 0).split(b"\\n")[0])["nonce"]
        if {truncate}:
            os.ftruncate(fd, 0)
        os.write(fd, json.dumps({{"nonce": nonce, **record}}).encode() + b"\\n")
        print("FORGED")
        break
"""

FORGERIES = {
    "setup_failed after truncating the channel": ({"kind": "setup_failed", "error": "forged"}, True),
    "an unhashable errno": ({"kind": "solve_error", "library": "gurobipy", "errno": []}, False),
    "an unhashable error type": ({"kind": "solve_error", "library": "x", "error_type": []}, False),
    "a numeric error type": ({"kind": "solve_error", "library": "x", "error_type": 5}, False),
    "an end record with a list as its error": ({"kind": "end", "exit_code": 0, "error": [1]}, False),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_record_is_the_programs_failure_not_the_runs(pool: SandboxPool, name: str) -> None:
    record, truncate = FORGERIES[name]
    code = FORGER.format(record=json.dumps(record), truncate=truncate)

    execution = pool.run(Job(code=code, expect="any"))

    assert "FORGED" in execution.stdout_tail, (execution.status, execution.detail, execution.stderr_tail)
    assert execution.status is not ExecStatus.NOT_RUN
    after = pool.run(Job(code="print('next')", expect="any"))
    assert after.status is ExecStatus.OK and "next" in after.stdout_tail
