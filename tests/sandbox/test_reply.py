"""The worker's reply as a typed record (issue 43): one encoding, strict decoding, and a reply the
harness cannot read is the job's failure and the worker's replacement, never the harness's crash."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.sandbox.runtime import framing
from trex_eval.sandbox.runtime.contract import PROTOCOL, CollectedFile, JobReply
from trex_eval.sandbox.worker import WorkerFailure, WorkerProcess

FULL = JobReply(
    id="0123abcd",
    exit_code=3,
    signal=None,
    started=True,
    killed_for="output",
    wall_s=1.25,
    starved_s=0.5,
    cpu_received_s=None,
    cpu_s=0.75,
    max_rss_kib=2048,
    stdout=b"out\x00\xff\x1b",
    stderr=b"",
    stdout_bytes=1 << 40,
    stderr_bytes=0,
    channel=b'{"nonce":"n","kind":"start"}\n\x00',
    channel_dropped=7,
    files=(
        CollectedFile("m\udcff.lp", 3, False, b"\x00\x01\xfe"),
        CollectedFile("sub/model.mps", 1 << 30, True, b"NAME"),
    ),
    files_dropped=2,
    files_dropped_bytes=99,
    retire="could not clean",
)


def _wire(reply: JobReply) -> dict[str, Any]:
    """``reply`` as the harness reads it off the pipe: encoded, framed, and the frame's body decoded."""
    frame = framing.encode(*reply.encode())
    return framing.decode_body(frame[framing.HEADER_BYTES :])


@pytest.mark.parametrize(
    "reply",
    [
        FULL,
        JobReply(id="x", not_run=True, retire="traces left"),
        JobReply(id="x", lost="the worker's zygote is gone", retire="the worker's zygote is gone"),
        JobReply(id="x", error="OSError: boom"),
    ],
)
def test_every_kind_of_reply_round_trips_through_a_frame(reply: JobReply) -> None:
    assert JobReply.decode(_wire(reply)) == reply


def test_decoding_names_every_field_the_record_has() -> None:
    """The wire holds exactly the record's fields (and one byte field per collected file)."""
    message = _wire(FULL)

    assert set(message) == (set(JobReply._fields) - {"files"}) | {"files", "file:0", "file:1"}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"exit_code": "0"}, "'exit_code' is str"),
        ({"exit_code": True}, "'exit_code' is bool"),
        ({"signal": -9}, "'signal' is int -9"),
        ({"wall_s": float("nan")}, "'wall_s' is float nan"),
        ({"cpu_s": float("inf")}, "'cpu_s' is float inf"),
        ({"started": 1}, "'started' is int"),
        ({"killed_for": "boredom"}, "'killed_for' is 'boredom'"),
        ({"id": None}, "'id' is NoneType"),
        ({"stdout": "text, not bytes"}, "'stdout' is not a byte field"),
        ({"file:1": "text"}, "'file:1' is not a byte field"),
        ({"files": {"name": "a"}}, "'files' is not a list"),
        ({"files": [{"name": "a", "size": 1, "truncated": False}, ["b", 1, False]]}, "collected file 1"),
        ({"files": [{"name": "a", "size": -1, "truncated": False}] * 2}, "collected file 0"),
        ({"extra": 1}, "unknown ['extra']"),
        ({"retire": None, "lost": None, "wall_s": None}, "'wall_s' is NoneType"),
    ],
)
def test_a_malformed_reply_is_refused_naming_its_field(change: dict[str, Any], words: str) -> None:
    message = {**_wire(FULL), **change}

    with pytest.raises(ValueError) as refused:
        JobReply.decode(message)
    assert words in str(refused.value)


def test_a_reply_missing_a_field_or_a_file_s_bytes_is_refused() -> None:
    for name in ("exit_code", "channel", "file:1"):
        message = _wire(FULL)
        del message[name]
        with pytest.raises(ValueError, match=f"missing \\['{name}'\\]"):
            JobReply.decode(message)


FAKE_WORKER = """
import json, sys
from trex_eval.sandbox.runtime import framing
from trex_eval.sandbox.runtime.contract import PROTOCOL, JobReply

framing.write_frame(1, {"ready": True, "protocol": PROTOCOL + int(sys.argv[1])})
while True:
    try:
        request = framing.read_frame(0)
    except framing.FrameError:
        break
    message, blobs = JobReply(id=request["id"], exit_code=0, started=True).encode()
    message.update(json.loads(sys.argv[2]))
    framing.write_frame(1, message, blobs)
"""
"""A stand-in for a worker whose replies are changed by ``argv[2]`` (a JSON object), speaking
``PROTOCOL + argv[1]``: what a worker would send if something inside its sandbox could write
into its reply (the zygote closes the protocol's descriptors before any job exists, and the
worker is not dumpable, so a program cannot; the harness reads it strictly all the same)."""


def _fake_worker(tmp_path: Path, change: dict[str, Any], *, protocol_offset: int = 0) -> WorkerProcess:
    return WorkerProcess.spawn(
        [sys.executable, "-c", FAKE_WORKER, str(protocol_offset), json.dumps(change)],
        env=dict(os.environ),
        log_path=tmp_path / "fake-worker.log",
    )


def test_a_worker_of_another_protocol_is_refused_at_start(tmp_path: Path) -> None:
    fake = _fake_worker(tmp_path, {}, protocol_offset=1)
    try:
        with pytest.raises(WorkerFailure, match=f"speaks protocol {PROTOCOL + 1}, this harness {PROTOCOL}"):
            fake.await_ready(30.0)
    finally:
        fake.kill()
        fake.release()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"exit_code": "0"}, "its reply is malformed: field 'exit_code' is str"),
        ({"id": "another"}, "its reply answers request 'another'"),
    ],
)
def test_a_reply_the_harness_cannot_trust_fails_the_job_and_replaces_the_worker(
    tmp_path: Path, change: dict[str, Any], words: str
) -> None:
    """End to end through a real pool: its one worker is swapped for the stand-in; the job gets
    ``killed`` with the reason, the stand-in is replaced by a real worker, and the next job runs."""
    with SandboxPool(workers=1, cgroups=False) as pool:
        lanes = pool._lanes  # white box: only a test can put a worker of its own in a lane
        assert lanes is not None
        real = lanes.take()
        lanes._live.discard(real)
        real.kill()
        real.release()
        fake = _fake_worker(tmp_path, change)
        fake.await_ready(30.0)
        lanes._live.add(fake)
        lanes.give_back(fake)

        refused = pool.run(Job(code="print('never run')", expect="any"))
        after = pool.run(Job(code="print('on a real worker')", expect="any"))

    assert refused.status is ExecStatus.KILLED
    assert words in refused.detail and "never run" not in refused.stdout_tail
    assert fake.process.poll() is not None  # killed, not lent again
    assert after.status is ExecStatus.OK and "on a real worker" in after.stdout_tail
