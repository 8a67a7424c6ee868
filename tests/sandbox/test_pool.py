"""The pool as its callers use it: concurrency, asyncio, per-job limits, worker loss, manifest."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from trex_eval.errors import SandboxError
from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool


def test_threads_share_the_pool(pool: SandboxPool) -> None:
    jobs = [Job(code=f"print({i} * {i})", expect="any") for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as executor:
        executions = list(executor.map(pool.run, jobs))

    assert [e.status for e in executions] == [ExecStatus.OK] * 12
    assert [e.stdout_tail.strip() for e in executions] == [str(i * i) for i in range(12)]


def test_asyncio_callers(pool: SandboxPool) -> None:
    async def main() -> list[str]:
        jobs = [pool.arun(Job(code=f"print('async {i}')", expect="any")) for i in range(4)]
        return [execution.stdout_tail.strip() for execution in await asyncio.gather(*jobs)]

    assert asyncio.run(main()) == [f"async {i}" for i in range(4)]


def test_two_workers_run_in_parallel(pool: SandboxPool) -> None:
    job = Job(code="import time\ntime.sleep(1.5)\n", expect="any")
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as executor:
        statuses = [e.status for e in executor.map(pool.run, [job, job])]

    assert statuses == [ExecStatus.OK, ExecStatus.OK]
    assert time.monotonic() - started < 2.9


def test_files_and_working_directory_token(pool: SandboxPool) -> None:
    code = "import json, os\nprint(json.load(open('lp_final/data.json'))['n'])\n"
    code += "print(os.getcwd() == '@@TREX_WORKDIR@@')\n"
    execution = pool.run(Job(code=code, files={"lp_final/data.json": '{"n": 7}'}, expect="any"))

    assert execution.stdout_tail.split() == ["7", "True"]


def test_each_job_runs_with_its_own_directories_in_its_environment(pool: SandboxPool) -> None:
    """The worker sets HOME, TMPDIR and PWD before each fork: every job, on either worker, sees
    its own working directory and a writable temporary directory, never a previous job's."""
    code = """import json, os, tempfile
with tempfile.NamedTemporaryFile(dir=os.environ["TMPDIR"]) as scratch:
    scratch.write(b"x")
print(json.dumps({"cwd": os.getcwd(), "home": os.environ["HOME"], "pwd": os.environ["PWD"],
                  "tmp": os.environ["TMPDIR"], "tmp_is_dir": os.path.isdir(os.environ["TMPDIR"])}))
"""
    with ThreadPoolExecutor(max_workers=2) as executor:
        executions = list(executor.map(pool.run, [Job(code=code, expect="any")] * 6))

    for execution in executions:
        assert execution.status is ExecStatus.OK, execution.stderr_tail
        seen = json.loads(execution.stdout_tail)
        assert seen["home"] == seen["pwd"] == seen["cwd"]
        assert seen["tmp_is_dir"] and seen["tmp"] != seen["cwd"]


def test_model_files_are_collected(pool: SandboxPool) -> None:
    code = "import os\nos.makedirs('out')\nopen('out/m.lp', 'w').write('Minimize\\n obj: x\\nEnd\\n')\n"
    code += "open('notes.txt', 'w').write('not collected')\nopen('m.mps', 'w').write('NAME m')\n"
    execution = pool.run(Job(code=code, expect="model_file"))

    assert execution.status is ExecStatus.OK
    assert sorted(f.name for f in execution.written_files) == ["m.mps", "out/m.lp"]


def test_per_job_limits(pool: SandboxPool) -> None:
    execution = pool.run(
        Job(code="import time\ntime.sleep(5)\n", expect="any"), limits=SandboxLimits(wall_s=0.5)
    )

    assert execution.status is ExecStatus.TIMEOUT and execution.wall_s < 3


def test_describe_is_a_manifest_entry(pool: SandboxPool) -> None:
    described = pool.describe()

    assert described["isolation"]["level"] == pool.isolation  # type: ignore[index]
    assert described["limits"]["wall_s"] == 60.0  # type: ignore[index]
    assert {solver["library"] for solver in described["licence"]["solvers"]} == {"gurobipy", "coptpy"}  # type: ignore[index]
    assert "gurobipy" in described["versions"]  # type: ignore[operator]


def test_lost_worker_is_reported_and_replaced() -> None:
    with SandboxPool(workers=1, limits=SandboxLimits(wall_s=30)) as small:
        results = []
        thread = threading.Thread(
            target=lambda: results.append(small.run(Job(code="import time\ntime.sleep(20)\n", expect="any")))
        )
        thread.start()
        time.sleep(1.0)
        killed = time.monotonic()
        for worker in list(small._lanes._live):  # type: ignore[union-attr]  # white box: a program cannot reach its worker, the test can
            worker.kill()
        thread.join(timeout=30)
        noticed = time.monotonic() - killed
        after = small.run(Job(code="print('replaced')", expect="any"))

    (lost,) = results
    assert lost.status is ExecStatus.KILLED and "worker died" in lost.detail
    assert noticed < 5.0  # the caller learns at once, not at the job's deadline
    assert after.status is ExecStatus.OK and "replaced" in after.stdout_tail


def test_unstarted_and_closed_pools_refuse_jobs() -> None:
    pool = SandboxPool(workers=1)
    with pytest.raises(SandboxError, match="not started"):
        pool.run(Job(code="pass"))
    pool.start()
    pool.close()
    pool.close()
    with pytest.raises(SandboxError, match="closed"):
        pool.run(Job(code="pass"))
