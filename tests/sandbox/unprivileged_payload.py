"""Run by test_isolation as an unprivileged user: start a pool at the requested isolation level,
try a solve, a connection to the host, a fork bomb and a setsid escape, print the outcomes as JSON."""

from __future__ import annotations

import json
import os
import sys

from trex_eval.sandbox import Job, SandboxLimits, SandboxPool

SOLVE = """
import pulp
problem = pulp.LpProblem("t", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 4)
problem += x
problem.solve(pulp.PULP_CBC_CMD(msg=0))
"""
BOMB = """
import ctypes, os
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(sys.argv_tag.encode()), 0, 0, 0)
while True:
    os.fork()
"""


def main() -> None:
    level, port, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    limits = SandboxLimits(wall_s=10, cpu_s=5, max_processes=16, memory_mib=1024)
    outcome: dict[str, object] = {"uid": os.getuid()}
    with SandboxPool(workers=1, isolation=level, limits=limits) as pool:  # type: ignore[arg-type]
        outcome["level"] = pool.isolation
        outcome["network_blocked"] = pool.isolation_report.network_blocked
        outcome["jobs"] = pool.describe()["jobs"]
        outcome["fair_share"] = pool.describe()["fair_share"]
        solved = pool.run(Job(code=SOLVE))
        outcome["solve"] = [solved.status.value, [s.objective for s in solved.solves]]
        connect = (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')\n"
        )
        outcome["connect"] = pool.run(Job(code=connect, expect="any")).status.value
        bomb = BOMB.replace("sys.argv_tag", repr(tag))
        outcome["bomb"] = pool.run(Job(code=bomb, expect="any")).status.value
        escape = (
            f"import subprocess\ntry:\n    subprocess.Popen(['sleep', '{tag}'], start_new_session=True)\n"
            f"except PermissionError:\n    subprocess.Popen(['sleep', '{tag}'])\n"
        )
        outcome["escape"] = pool.run(Job(code=escape, expect="any")).status.value
    print("OUTCOME " + json.dumps(outcome))


if __name__ == "__main__":
    main()
