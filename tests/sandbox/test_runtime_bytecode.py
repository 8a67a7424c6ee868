"""The pool caches the runtime's bytecode, which its workers (run with -B) only read."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from trex_eval.sandbox.launch import RUNTIME_DIR

CACHE = """
import json, sys
from trex_eval.sandbox import launch
print(json.dumps(launch.cache_runtime_bytecode()))
"""


def _run(*flags: str) -> bool:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, *flags, "-c", CACHE], capture_output=True, text=True, env=environment, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return bool(json.loads(done.stdout))


def test_every_runtime_module_has_current_bytecode_after_the_cache_step() -> None:
    assert _run()
    sources = sorted(RUNTIME_DIR.rglob("*.py"))
    assert len(sources) > 20
    for source in sources:
        cached = importlib.util.cache_from_source(str(source))
        assert os.path.exists(cached), source
        with open(cached, "rb") as handle:
            header = handle.read(16)
        assert header[:4] == importlib.util.MAGIC_NUMBER, source
        if int.from_bytes(header[4:8], "little") == 0:  # timestamp-checked (no SOURCE_DATE_EPOCH)
            # The source's mtime as recorded matches the file: the loader takes the cache.
            assert int.from_bytes(header[8:12], "little") == int(source.stat().st_mtime) & 0xFFFFFFFF, source


def test_an_interpreter_told_to_write_no_bytecode_writes_none() -> None:
    assert not _run("-B")
