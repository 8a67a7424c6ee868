"""The zygote claims the free chunks of its C heap, so that a job's allocations come from fresh pages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trex_eval.sandbox.runtime import heap

# Run in a fresh interpreter: the claim keeps what it takes for the life of the process.
FRAGMENT_AND_CLAIM = """
import ctypes, json
from trex_eval.sandbox.runtime import heap

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = heap._MallInfo2
# Free every other chunk of a run of allocations: each freed chunk lies between two live ones,
# so none merges with a neighbour or with the top, and the bins end up holding them all.
sizes = [24 + 40 * (i % 23) for i in range(3000)] + [2000 + 500 * (i % 50) for i in range(200)]
pointers = [libc.malloc(size) for size in sizes]
for pointer in pointers[::2]:
    libc.free(pointer)
before = libc.mallinfo2().ordblks
first = heap.claim_free_chunks()
after = libc.mallinfo2().ordblks
second = heap.claim_free_chunks()
print(json.dumps({"before": before, "first": first, "after": after, "second": second}))
"""


def _mallinfo2_available() -> bool:
    import ctypes

    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _mallinfo2_available(), reason="the C library has no mallinfo2 (glibc < 2.33)")
def test_the_claim_empties_the_bins_a_fragmented_heap_left() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FRAGMENT_AND_CLAIM], capture_output=True, text=True, check=True, timeout=60
    )
    counts = json.loads(done.stdout)
    # The 1,600 freed chunks sat in the bins; afterwards only the top (and at most a remainder the
    # last split left) is free. A second claim takes back at most the one probe per request size
    # that the first gave back (it went to the thread's cache, next to the top).
    assert counts["before"] > 500, counts
    assert counts["first"] >= counts["before"] // 2, counts
    assert counts["after"] <= 3, counts
    assert counts["second"] <= len(heap._REQUESTS), counts


def test_the_claim_is_bounded_in_time_and_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_BUDGET_S", 0.0)
    assert heap.claim_free_chunks() == 0
    monkeypatch.setattr(heap, "_BUDGET_S", 5.0)
    monkeypatch.setattr(heap, "_MOST_CLAIMED", 0)
    assert heap.claim_free_chunks() == 0
