#!/usr/bin/env python3
"""Bandwidth of the covert channels that remain between sandboxed jobs (docs/architecture.md).

Each channel is tried the way a colluding pair of programs would use it, through a real
:class:`~trex_eval.sandbox.SandboxPool` at the strongest isolation available: a writer job encodes
a random value, a reader job decodes it, and the script counts how often the reader got it right.

``inode``  (sequential jobs of one worker) pipe inode numbers come from one counter of the whole
           kernel (``get_next_ino``, per CPU in batches of 1024): the writer creates pipes until the
           counter's low bits equal its value, the reader reads them from a pipe of its own.
``cache``  (sequential jobs) the page cache is the machine's: the writer loads (1) or evicts (0,
           ``posix_fadvise(DONTNEED)``) chosen pages of the largest files the view holds, the
           reader tries ``preadv2(RWF_NOWAIT)``, which fails where a page is not cached
           (``mincore`` tells the same to the files' owner). The syscall filter refuses these now;
           the row says so when the reader is refused.
``cache-timed`` the same writer, and a reader that times a plain read of each page instead (a
           page read from the disk is slow): what no syscall filter can refuse. The writer can only
           load pages now, so only pages not cached before it carry a bit.
``timing`` (concurrent jobs on two workers) the writer keeps its worker's CPUs busy or idle in
           time slots, the reader times a loop of its own in the same slots.

    python scripts/bench_covert_channels.py [--pairs 30] [--only inode|cache|timing]

Printed per channel: pairs, bits per pair, correct pairs, and the information rate estimate
``bits x (2p - 1)`` per pair (p: fraction correct; 0 when the reader does no better than chance).
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import threading
import time
from typing import Any

from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool

INODE_BITS = 8
INODE_WRITER = """
import os
value = {value}
while True:
    read, write = os.pipe()
    number = os.fstat(read).st_ino
    os.close(read); os.close(write)
    if number % 256 == value:
        break
"""
INODE_READER = """
import os
read, write = os.pipe()
print("VALUE", (os.fstat(read).st_ino + {offset}) % 256)
"""

CACHE_BITS = 16
CACHE_WRITER = """
import mmap, os
path_offsets, value = {path_offsets!r}, {value}
for bit, (path, offset) in enumerate(path_offsets):
    with open(path, "rb") as handle:
        if value >> bit & 1:
            handle.seek(offset)
            handle.read(1)
        else:
            # Whole 2 MiB: the page cache holds large folios, evicted only when wholly covered.
            start = offset - offset % (2 << 20)
            try:
                os.posix_fadvise(handle.fileno(), start, 2 << 20, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
"""
CACHE_READER = """
import errno, json, os
bits = []
for path, offset in {path_offsets!r}:
    fd = os.open(path, os.O_RDONLY)
    try:
        # RWF_NOWAIT fails with EAGAIN where the data is not in the page cache.
        os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT)
        bits.append(1)
    except BlockingIOError:
        bits.append(0)
    except OSError as error:
        raise SystemExit(f"preadv2(RWF_NOWAIT) refused: {{error.strerror}}")
    finally:
        os.close(fd)
print("BITS", json.dumps(bits))
"""
CACHE_TIMER = """
import json, os, time
bits = []
for path, offset in {path_offsets!r}:
    fd = os.open(path, os.O_RDONLY)
    started = time.perf_counter()
    os.pread(fd, 1, offset)
    # A page read from the disk takes tens of microseconds or more; a cached one about one.
    bits.append(int(time.perf_counter() - started < 20e-6))
    os.close(fd)
print("BITS", json.dumps(bits))
"""
FIND_FILES = """
import json, os, sys
roots = [path for path in sys.path if os.path.isdir(path)] + ["/usr/lib", "/usr/bin"]
sizes = []
for top in roots:
    for root, _, names in os.walk(top):
        for name in names:
            path = os.path.join(root, name)
            # Not shared libraries: pages a process maps cannot be evicted.
            if os.path.isfile(path) and not os.path.islink(path) and ".so" not in name:
                sizes.append((os.path.getsize(path), path))
print("FILES", json.dumps([[path, size] for size, path in sorted(sizes)[-40:]]))
"""

TIMING_SLOTS = 24
TIMING_SLOT_S = 0.1
TIMING_WRITER = """
import os, time
pattern, slot, start = {pattern!r}, {slot}, {start}
children = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        while time.time() < start:
            time.sleep(0.001)
        for bit in pattern:
            end = time.time() + slot
            if bit:
                while time.time() < end:
                    pass
            else:
                time.sleep(max(0.0, end - time.time()))
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""
TIMING_READER = """
import json, time
slots, slot, start = {slots}, {slot}, {start}
while time.time() < start:
    time.sleep(0.001)
counts = []
for _ in range(slots):
    end = time.time() + slot
    spins = 0
    while time.time() < end:
        spins += 1
    counts.append(spins)
print("COUNTS", json.dumps(counts))
"""


def _tagged(stdout: str, tag: str) -> Any:
    line = next(line for line in reversed(stdout.splitlines()) if line.startswith(tag + " "))
    return json.loads(line[len(tag) + 1 :])


def inode_channel(pool: SandboxPool, pairs: int) -> tuple[int, int]:
    """Correct pairs out of ``pairs``; the reader's offset is calibrated on a first pair, as a
    colluding pair would agree on it in advance."""
    calibration = secrets.randbelow(256)
    pool.run(Job(code=INODE_WRITER.format(value=calibration), expect="any"))
    seen = pool.run(Job(code=INODE_READER.format(offset=0), expect="any"))
    offset = (calibration - int(str(_tagged(seen.stdout_tail, "VALUE")))) % 256
    correct = 0
    for _ in range(pairs):
        value = secrets.randbelow(256)
        pool.run(Job(code=INODE_WRITER.format(value=value), expect="any"))
        read = pool.run(Job(code=INODE_READER.format(offset=offset), expect="any"))
        correct += int(str(_tagged(read.stdout_tail, "VALUE"))) == value
    return correct, INODE_BITS


def cache_channel(pool: SandboxPool, pairs: int, *, timed: bool = False) -> tuple[int, int, str]:
    """Correct pairs, bits per pair, and why the reader could not read (empty if it could). The
    writer loads a page for a 1 and evicts it (``posix_fadvise(DONTNEED)``) for a 0; the reader
    reads it with ``RWF_NOWAIT`` (``timed``: times a plain read of it instead, which no filter
    can refuse; a page that was cached before the writer reads as a 1)."""
    files = _tagged(pool.run(Job(code=FIND_FILES, expect="any")).stdout_tail, "FILES")
    correct = 0
    for _ in range(pairs):
        chosen = [secrets.choice(files) for _ in range(CACHE_BITS)]
        places = [[path, secrets.randbelow(int(size))] for path, size in chosen]
        value = secrets.randbelow(1 << CACHE_BITS)
        pool.run(Job(code=CACHE_WRITER.format(path_offsets=places, value=value), expect="any"))
        reader = CACHE_TIMER if timed else CACHE_READER
        read = pool.run(Job(code=reader.format(path_offsets=places), expect="any"))
        if read.status is not ExecStatus.OK:
            return correct, CACHE_BITS, read.stderr_tail.strip().splitlines()[-1][:80]
        bits = _tagged(read.stdout_tail, "BITS")
        correct += sum(bit << index for index, bit in enumerate(bits)) == value
    return correct, CACHE_BITS, ""


def timing_channel(pool: SandboxPool, pairs: int) -> tuple[int, int]:
    """Correct bits out of ``pairs * TIMING_SLOTS`` (each slot one bit, read against the median)."""
    correct = 0
    for _ in range(pairs):
        pattern = [secrets.randbelow(2) for _ in range(TIMING_SLOTS)]
        start = time.time() + 1.0
        code = TIMING_WRITER.format(pattern=pattern, slot=TIMING_SLOT_S, start=start)
        writer = threading.Thread(target=pool.run, args=(Job(code=code, expect="any"),))
        writer.start()
        read = pool.run(
            Job(code=TIMING_READER.format(slots=TIMING_SLOTS, slot=TIMING_SLOT_S, start=start), expect="any")
        )
        writer.join()
        counts = _tagged(read.stdout_tail, "COUNTS")
        middle = statistics.median(counts)
        decoded = [int(count < middle) for count in counts]
        correct += sum(a == b for a, b in zip(decoded, pattern, strict=True))
    return correct, TIMING_SLOTS


def _rate(correct: int, total: int, bits: int) -> float:
    """Bits per pair a reader gets, by the crude estimate ``bits x (2p - 1)`` (p = correct share)."""
    share = correct / total if total else 0.0
    return max(0.0, bits * (2 * share - 1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--only", choices=("inode", "cache", "cache-timed", "timing"), action="append")
    options = parser.parse_args()
    wanted = options.only or ["inode", "cache", "cache-timed", "timing"]
    limits = SandboxLimits(wall_s=30.0, cpu_s=30.0)
    print(f"{'channel':<8} {'pairs':>6} {'bits/pair':>10} {'correct':>8} {'~bits/pair':>11}  notes")
    with SandboxPool(workers=1, limits=limits) as pool:
        isolation = pool.isolation
        if "inode" in wanted:
            correct, bits = inode_channel(pool, options.pairs)
            rate = _rate(correct, options.pairs, bits)
            print(f"{'inode':<8} {options.pairs:>6} {bits:>10} {correct:>8} {rate:>11.2f}")
        if "cache" in wanted:
            correct, bits, refused = cache_channel(pool, options.pairs)
            rate = 0.0 if refused else _rate(correct, options.pairs, bits)
            print(f"{'cache':<8} {options.pairs:>6} {bits:>10} {correct:>8} {rate:>11.2f}  {refused}")
        if "cache-timed" in wanted:
            correct, bits, refused = cache_channel(pool, options.pairs, timed=True)
            rate = 0.0 if refused else _rate(correct, options.pairs, bits)
            print(f"{'c-timed':<8} {options.pairs:>6} {bits:>10} {correct:>8} {rate:>11.2f}  {refused}")
    if "timing" in wanted:
        with SandboxPool(workers=2, limits=limits) as pool:
            correct, slots = timing_channel(pool, options.pairs)
            total = options.pairs * slots
            rate = _rate(correct, total, 1) * slots
            cgroups = pool.fair_share["cgroups"]
            print(
                f"{'timing':<8} {options.pairs:>6} {slots:>10} {correct:>8} {rate:>11.2f}  "
                f"{correct / total:.0%} of {TIMING_SLOT_S * 1000:.0f} ms slots right; cgroups: {cgroups}"
            )
    print(f"isolation: {isolation}")


if __name__ == "__main__":
    main()
