"""Small pure pieces: job validation, collection globs, framing, bubblewrap masks."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from pydantic import ValidationError

from trex_eval.sandbox import Job
from trex_eval.sandbox.launch import mask_arguments, sandbox_environment
from trex_eval.sandbox.runtime import framing
from trex_eval.sandbox.runtime.workdir import glob_regex


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


def test_masks_hide_homes_and_rebind_what_the_interpreter_needs() -> None:
    # Not tmp_path: pytest's base directory is itself private (0700) and would be masked too.
    root = tempfile.mkdtemp()
    try:
        os.chmod(root, 0o755)
        home = os.path.join(root, "home")
        private = os.path.join(home, "alice")
        venv = os.path.join(private, "venv")
        os.makedirs(os.path.join(venv, "lib"))
        os.chmod(private, 0o700)

        arguments = mask_arguments([os.path.join(venv, "lib")], hide=(home,), private=())
    finally:
        shutil.rmtree(root)

    lib = os.path.join(venv, "lib")
    assert arguments == [
        *("--perms", "0755", "--tmpfs", home),
        *("--perms", "0755", "--tmpfs", private),
        *("--perms", "0755", "--dir", venv),
        *("--ro-bind", lib, lib),
    ]


def test_only_the_needed_paths_come_back_under_a_private_tmp() -> None:
    needed = [
        "/tmp/ci/p/.venv",
        "/tmp/ci/p/.venv/lib/python3.11/site-packages",
        "/tmp/ci/p/trex_eval/runtime",
        "/usr/lib",
    ]
    arguments = mask_arguments(needed, hide=())
    assert arguments == [
        *("--perms", "0755", "--dir", "/tmp/ci"),
        *("--perms", "0755", "--dir", "/tmp/ci/p"),
        *("--ro-bind", "/tmp/ci/p/.venv", "/tmp/ci/p/.venv"),
        *("--perms", "0755", "--dir", "/tmp/ci/p/trex_eval"),
        *("--ro-bind", "/tmp/ci/p/trex_eval/runtime", "/tmp/ci/p/trex_eval/runtime"),
    ]


def test_sandbox_environment_is_built_from_nothing() -> None:
    environment = sandbox_environment({"GRB_LICENSE_FILE": "/licences/gurobi.lic"})

    assert environment["OMP_NUM_THREADS"] == environment["OPENBLAS_NUM_THREADS"] == "1"
    assert environment["GRB_LICENSE_FILE"] == "/licences/gurobi.lic"
    assert not {"HOME", "USER", "OPENAI_API_KEY"} & set(environment)
