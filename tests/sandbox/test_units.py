"""Small pure pieces: job validation, collection globs, framing, the bubblewrap view."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile

import pytest
from pydantic import ValidationError

from trex_eval.sandbox import Job
from trex_eval.sandbox.launch import _ancestors, _View, sandbox_environment
from trex_eval.sandbox.runtime import framing
from trex_eval.sandbox.runtime.channel import ResultChannel
from trex_eval.sandbox.runtime.contract import JobOrder
from trex_eval.sandbox.runtime.workdir import glob_regex
from trex_eval.sandbox.site_entries import _owned_entries


@pytest.mark.parametrize("path", ["/etc/passwd", "../up.json", "a/../../up", "", "program.py", "a\\b"])
def test_job_rejects_paths_leaving_the_working_directory(path: str) -> None:
    with pytest.raises(ValidationError):
        Job(code="", files={path: "x"})


def test_job_accepts_sub_folders() -> None:
    assert Job(code="", files={"lp_final/data_2_problem2.json": "{}"}).files


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.lp", "model.lp", True),
        ("**/*.lp", "out/deep/model.lp", True),
        ("**/*.lp", "model.lp.bak", False),
        ("*.lp", "out/model.lp", False),
        ("out/?.mps", "out/a.mps", True),
        ("out/?.mps", "out/ab.mps", False),
        ("**", "any/thing", True),
    ],
)
def test_collection_globs(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_frames_round_trip_through_a_pipe() -> None:
    reader, writer = os.pipe()
    message = {"text": "ünïcode \udcff", "bounds": [float("inf"), -float("inf")], "n": 3}
    try:
        framing.write_frame(writer, message)
        received = framing.read_frame(reader)
    finally:
        os.close(writer)
    with pytest.raises(framing.FrameError):
        framing.read_frame(reader)
    os.close(reader)
    assert received == message


def test_what_a_program_wrote_travels_as_raw_bytes_not_six_times_larger() -> None:
    """The attack: NULs in the result channel took six bytes each in the JSON reply (``\\u0000``),
    so two such jobs took the harness to 568 MiB. Byte fields travel beside the JSON, as they are."""
    written = b"\0" * (4 << 20) + b"\x01\x1b\xff"
    frame = framing.encode(
        {"id": "x", "files": [{"name": "m.lp"}]}, {"channel": written, "file:0": b"\0" * 10}
    )

    assert len(frame) < len(written) + 200
    decoded = framing.decode_body(frame[framing.HEADER_BYTES :])
    assert decoded["channel"] == written and decoded["file:0"] == b"\0" * 10
    assert decoded["id"] == "x" and decoded["files"] == [{"name": "m.lp"}]
    with pytest.raises(framing.FrameError):
        framing.decode_body(frame[framing.HEADER_BYTES : -5])  # a byte field cut short


def test_the_view_binds_what_is_exposed_and_creates_its_parents_traversable() -> None:
    # Not tmp_path: pytest's base directory is private (0700), which the view must not copy. Directly
    # under /tmp (whatever TMPDIR says): the view's private /tmp then holds no parent of the root.
    root = tempfile.mkdtemp(dir="/tmp")
    try:
        venv = os.path.join(root, "home", "alice", "venv")
        os.makedirs(os.path.join(venv, "bin"))
        os.chmod(os.path.join(root, "home", "alice"), 0o700)
        real = os.path.join(venv, "bin", "python3.11")
        open(real, "w").close()
        os.symlink("python3.11", os.path.join(venv, "bin", "python"))
        view = _View(private=("/tmp",))
        view.expose(os.path.join(venv, "bin", "python"))
        view.hide(os.path.join(root, "home"))  # not in a bound tree: nothing to mask
    finally:
        shutil.rmtree(root)

    parents = [path for path in _ancestors(real) if path == root or path.startswith(root + "/")]
    link = os.path.join(venv, "bin", "python")
    assert view.arguments == [
        *(word for path in parents for word in ("--perms", "0755", "--dir", path)),
        *("--symlink", "python3.11", link),
        *("--ro-bind", real, real),
    ]
    assert view.exposed == [real]


def test_a_folder_shared_with_other_distributions_exposes_only_the_allowed_entries() -> None:
    files = [
        (("numpy", "__init__.py"), True),
        (("numpy-2.0.dist-info", "RECORD"), True),
        (("google", "protobuf", "__init__.py"), True),
        (("google", "genai", "__init__.py"), False),
        (("trex_eval.pth",), False),
        (("__pycache__", "typing_extensions.cpython-311.pyc"), True),
        (("__pycache__", "other.cpython-311.pyc"), False),
    ]

    assert sorted(_owned_entries(files)) == [
        ("__pycache__", "typing_extensions.cpython-311.pyc"),
        ("google", "protobuf"),
        ("numpy",),
        ("numpy-2.0.dist-info",),
    ]


def test_sandbox_environment_is_built_from_nothing() -> None:
    environment = sandbox_environment({"GRB_LICENSE_FILE": "/licences/gurobi.lic"})

    assert environment["OMP_NUM_THREADS"] == environment["OPENBLAS_NUM_THREADS"] == "1"
    assert environment["GRB_LICENSE_FILE"] == "/licences/gurobi.lic"
    assert not {"HOME", "USER", "OPENAI_API_KEY"} & set(environment)


def test_installed_paths_read_from_record_are_those_of_distribution_files() -> None:
    """The fast RECORD reader behind the bubblewrap view gives exactly the relative, ``..``-free
    paths of ``Distribution.files`` for every installed distribution."""
    import importlib.metadata
    from pathlib import Path

    from trex_eval.sandbox.site_entries import _installed_paths, _record_tops

    checked = 0
    for distribution in importlib.metadata.distributions():
        expected = [
            Path(file).parts
            for file in distribution.files or ()
            if Path(file).parts and ".." not in Path(file).parts and not Path(file).is_absolute()
        ]
        record = distribution.read_text("RECORD")
        assert _installed_paths(distribution, record) == expected, distribution.metadata["Name"]
        tops = _record_tops(record)
        # The quick top-level names are the paths' first parts (or defer to the full parse).
        assert tops is None or {parts[0] for parts in expected} == tops, distribution.metadata["Name"]
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("nproc_limit", [None, 0, 17])
def test_a_job_order_travels_as_its_fields_and_comes_back_equal(nproc_limit: int | None) -> None:
    order = JobOrder(
        nonce=secrets.token_hex(16),
        cpu_s=2.5,
        allowance_bytes=768 << 20,
        file_size_mib=64,
        nproc_limit=nproc_limit,
        gurobi="highs",
    )

    assert JobOrder.decode(order.encode()) == order
    with pytest.raises(ValueError):
        JobOrder.decode(order.encode() + b"\0extra")


@pytest.mark.parametrize("nonce", [secrets.token_hex(16), 'quote" back\\ é \udcff'])
def test_the_start_record_is_the_line_the_encoder_writes(nonce: str) -> None:
    """``emit_start`` writes the start record without the JSON encoder (a job writes it before
    its program, where each object it makes costs a page): byte for byte what ``emit`` writes."""
    first, second = (
        ResultChannel(ResultChannel.create_fd(), nonce),
        ResultChannel(ResultChannel.create_fd(), nonce),
    )
    try:
        first.emit("start", {})
        second.emit_start()
        assert first.read_all() == second.read_all()
        assert json.loads(second.read_all()[0]) == {"nonce": nonce, "kind": "start", "pid": os.getpid()}
    finally:
        first.close()
        second.close()
