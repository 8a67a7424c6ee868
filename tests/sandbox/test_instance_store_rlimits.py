"""The instance store at the ``rlimits`` level (issue 49): there programs run as the harness's user
and could rewrite a staged data file, so a pool stages into a store of its own, removed with it,
and the persistent store that later runs trust is never in their reach. In a fresh process: a
pool at ``rlimits`` withdraws the re-solve store for the process that starts it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REWRITE_AT_RLIMITS = """
import hashlib, json, sys
from pathlib import Path
from trex_eval.records import InstanceLink
from trex_eval.sandbox import Job, SandboxPool, instances

source = Path(sys.argv[1])
link = InstanceLink(name="data/costs.csv", source=str(source), bytes=source.stat().st_size,
                    sha256=hashlib.sha256(source.read_bytes()).hexdigest())
persistent = Path(instances.stage((link,))["data/costs.csv"])  # what a bwrap run staged earlier
code = '''
import os
path = os.path.realpath("data/costs.csv")
print("STAGED", path)
try:
    os.chmod(path, 0o644)
    with open(path, "w") as out:
        out.write("forged")
    print("REWROTE")
except OSError as error:
    print("REFUSED", error.errno)
'''
with SandboxPool(workers=1, isolation="rlimits") as pool:
    ran = pool.run(Job(code=code, links=(link,), expect="any"))
    scratch = str(pool._root)
staged = next(line.split(" ", 1)[1] for line in ran.stdout_tail.splitlines() if line.startswith("STAGED"))
print(json.dumps({"status": ran.status.value, "out": ran.stdout_tail, "staged": staged,
                  "scratch": scratch, "persistent": str(persistent),
                  "persistent_sha": hashlib.sha256(persistent.read_bytes()).hexdigest(),
                  "scratch_left": Path(scratch).exists(), "isolation": ran.isolation}))
"""


def test_a_program_at_rlimits_cannot_rewrite_the_persistent_store(tmp_path: Path) -> None:
    data = tmp_path / "costs.csv"
    data.write_text("item,cost\n1,3\n2,5\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", REWRITE_AT_RLIMITS, str(data)],
        capture_output=True,
        text=True,
        env={**os.environ, "TREX_CACHE_DIR": str(tmp_path / "cache")},
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["status"] == "ok" and found["isolation"] == "rlimits", found
    # The job was given a copy in the pool's own scratch store, not the persistent one.
    assert found["staged"].startswith(found["scratch"] + "/instances/")
    assert not found["staged"].startswith(str(tmp_path / "cache"))
    # Whatever it did to its copy (at rlimits it may rewrite it), the persistent copy is intact
    # and the pool's copy is gone with the pool.
    assert found["persistent_sha"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert not found["scratch_left"]
