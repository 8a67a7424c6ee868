"""The pure part of the executor: worker reply + result channel -> Execution (no processes here)."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import pytest

from trex_eval.records import ExecStatus, SolveStatus
from trex_eval.sandbox.channel import parse_channel
from trex_eval.sandbox.limits import SandboxLimits
from trex_eval.sandbox.outcome import build_execution, gurobipy_licence_failure
from trex_eval.sandbox.runtime.contract import CollectedFile, JobReply

NONCE = "n0nce"
LIMITS = SandboxLimits(wall_s=10, cpu_s=4, output_bytes=1000, tail_chars=20)
MATRIX = {
    "sense": "max",
    "objective_constant": 0.0,
    "var_names": ["x"],
    "obj": [1.0],
    "lb": [0.0],
    "ub": [4.0],
    "vtype": ["C"],
    "row_names": [],
    "row_lower": [],
    "row_upper": [],
    "a_row": [],
    "a_col": [],
    "a_val": [],
}


def record(kind: str, nonce: str = NONCE, **fields: Any) -> str:
    return json.dumps({"nonce": nonce, "kind": kind, "pid": 1, **fields})


def solve(objective: float = 4.0, status: str = "optimal", model: dict[str, Any] | None = MATRIX) -> str:
    return record(
        "solve",
        library="gurobipy",
        status=status,
        raw_status="OPTIMAL",
        objective=objective,
        sense="max",
        num_vars=1,
        num_constraints=0,
        model=model,
    )


def end(exit_code: int = 0, error: dict[str, Any] | None = None, **fields: Any) -> str:
    return record(
        "end",
        phase=fields.pop("phase", "run"),
        exit_code=exit_code,
        sys_exit=fields.pop("sys_exit", False),
        error=error,
        bindings=fields.pop("bindings", []),
    )


def error(error_type: str, message: str = "boom", **flags: Any) -> dict[str, Any]:
    return {
        "error_type": error_type,
        "message": message,
        "errno": flags.get("errno"),
        "memory": flags.get("memory", False),
        "output": flags.get("output", False),
        "in_solve": flags.get("in_solve", False),
    }


def job_reply(**fields: Any) -> JobReply:
    """A worker's reply as the harness decodes it: text given for its byte fields is encoded (a
    lone surrogate as the byte it escapes), files given as dicts become collected files."""
    for name in ("stdout", "stderr", "channel"):
        if isinstance(fields.get(name), str):
            fields[name] = fields[name].encode("utf-8", "surrogateescape")
    files = []
    for item in fields.pop("files", ()):
        data = item["content"].encode("utf-8", "surrogateescape")
        files.append(
            CollectedFile(item["name"], item.get("size", len(data)), item.get("truncated", False), data)
        )
    return JobReply(id="t", files=tuple(files), **fields)


def execute(*lines: str, expect: str = "solve", **reply: Any) -> Any:
    base: dict[str, Any] = {
        "exit_code": 0,
        "signal": None,
        "started": True,
        "killed_for": None,
        "wall_s": 0.1,
        "cpu_s": 0.05,
        "max_rss_kib": 2048,
        "stdout": "",
        "stderr": "",
        "files": [],
        "channel": "\n".join([record("start"), *lines]),
    }
    base.update(reply)
    return build_execution(job_reply(**base), nonce=NONCE, limits=LIMITS, expect=expect, isolation="bwrap")


def test_clean_solve_is_ok_with_all_fields() -> None:
    execution = execute(
        record("gurobipy", implementation="gurobipy 13.0.3"),
        solve(),
        end(),
        stdout="x" * 50,
        stderr="warning",
    )

    assert execution.status is ExecStatus.OK and execution.detail == ""
    assert execution.solves[0].objective == 4.0 and execution.solves[0].model is not None
    assert execution.solves[0].verification is None
    assert execution.gurobi == "gurobipy 13.0.3"
    assert execution.stdout_tail == "x" * 20 and execution.stderr_tail == "warning"
    assert execution.max_rss_mib == 2.0 and execution.isolation == "bwrap"


def test_records_without_the_nonce_are_ignored() -> None:
    execution = execute(solve(), solve(objective=99.0).replace(NONCE, "forged"), "not json", end())

    assert [s.objective for s in execution.solves] == [4.0]


@pytest.mark.parametrize(
    ("reply", "status", "words"),
    [
        ({"killed_for": "wall", "signal": 9, "exit_code": None}, ExecStatus.TIMEOUT, "wall-clock"),
        ({"killed_for": "output", "signal": 9, "exit_code": None}, ExecStatus.OUTPUT_LIMIT, "1000 bytes"),
        ({"killed_for": "processes", "signal": 9, "exit_code": None}, ExecStatus.KILLED, "processes"),
        ({"signal": 9, "exit_code": None, "cpu_s": 3.9}, ExecStatus.TIMEOUT, "CPU"),
        ({"signal": 9, "exit_code": None, "cpu_s": 0.2}, ExecStatus.KILLED, "SIGKILL"),
        ({"signal": 11, "exit_code": None}, ExecStatus.KILLED, "SIGSEGV"),
        ({"signal": 6, "exit_code": None, "stderr": "std::bad_alloc"}, ExecStatus.MEMORY_LIMIT, "allocation"),
    ],
)
def test_supervision_outcomes_win_over_the_channel(
    reply: dict[str, Any], status: ExecStatus, words: str
) -> None:
    execution = execute(solve(), **reply)

    assert execution.status is status
    assert words in execution.detail


def test_compile_error_is_a_syntax_error() -> None:
    execution = execute(
        end(1, error("SyntaxError", "invalid syntax (program.py, line 1)"), phase="compile"), exit_code=1
    )

    assert execution.status is ExecStatus.SYNTAX_ERROR and execution.error_type == "SyntaxError"


def test_exception_after_a_solve_fails_the_program() -> None:
    execution = execute(solve(), end(1, error("KeyError", "'x'")), exit_code=1)

    assert execution.status is ExecStatus.RUNTIME_ERROR
    assert execution.detail == "KeyError: 'x'" and execution.solves


@pytest.mark.parametrize(
    ("flags", "status"),
    [
        ({"memory": True}, ExecStatus.MEMORY_LIMIT),
        ({"output": True}, ExecStatus.OUTPUT_LIMIT),
        ({"in_solve": True}, ExecStatus.SOLVER_ERROR),
    ],
)
def test_exception_kinds(flags: dict[str, bool], status: ExecStatus) -> None:
    assert execute(end(1, error("E", **flags)), exit_code=1).status is status


def test_gurobi_size_limit_is_a_licence_error_even_when_caught() -> None:
    failure = record(
        "solve_error",
        library="gurobipy",
        error_type="GurobiError",
        errno=10010,
        message="Model too large for size-limited license",
    )
    execution = execute(failure, end())

    assert execution.status is ExecStatus.LICENCE_ERROR
    assert gurobipy_licence_failure(execution)


def test_copt_licence_error_is_recognised() -> None:
    failure = record(
        "solve_error",
        library="coptpy",
        error_type="CoptError",
        errno=4,
        message="4, (LICENSE) Fail to solve problem",
    )
    execution = execute(failure, end(1, error("CoptError", "(LICENSE) Fail", in_solve=True)), exit_code=1)

    assert execution.status is ExecStatus.LICENCE_ERROR
    assert not gurobipy_licence_failure(execution)


def test_licence_error_does_not_mask_a_later_successful_solve() -> None:
    failure = record(
        "solve_error", library="gurobipy", error_type="GurobiError", errno=10010, message="too large"
    )
    assert execute(failure, solve(), end()).status is ExecStatus.OK


def test_missing_highs_layer_needs_gurobi() -> None:
    execution = execute(
        record("gurobipy", implementation=None, highs_missing="/nowhere"),
        end(1, error("ModuleNotFoundError")),
        exit_code=1,
    )

    assert execution.status is ExecStatus.NEEDS_GUROBI


@pytest.mark.parametrize(
    ("lines", "reply", "status", "words"),
    [
        ([end(3, sys_exit=True)], {"exit_code": 3}, ExecStatus.RUNTIME_ERROR, "sys.exit(3)"),
        ([], {"exit_code": 5}, ExecStatus.RUNTIME_ERROR, "os._exit(5)"),
        ([solve()], {}, ExecStatus.OK, "os._exit(0)"),
        ([end(0, sys_exit=True)], {}, ExecStatus.NO_SOLVE, "without calling"),
    ],
)
def test_exits(lines: list[str], reply: dict[str, Any], status: ExecStatus, words: str) -> None:
    execution = execute(*lines, **reply)

    assert execution.status is status and words in execution.detail


def test_failed_solve_without_success_is_a_solver_error() -> None:
    failure = record("solve_error", library="pulp", error_type="PulpSolverError", message="cbc crashed")
    assert execute(failure, end()).status is ExecStatus.SOLVER_ERROR
    assert execute(solve(status="error"), end()).status is ExecStatus.SOLVER_ERROR


def test_expectations() -> None:
    lp_file = [{"name": "model.lp", "content": "Minimize\n obj: x\nEnd\n", "size": 22}]

    assert execute(end(), expect="solve").status is ExecStatus.NO_SOLVE
    assert execute(end(), expect="model_file").status is ExecStatus.NO_SOLVE
    assert execute(end(), expect="model_file", files=lp_file).status is ExecStatus.OK
    assert execute(end(), expect="any").status is ExecStatus.OK


def test_written_file_keeps_exact_bytes_digest() -> None:
    raw = b"\\ weird \xff byte\n"
    content = raw.decode("utf-8", "surrogateescape")
    execution = execute(end(), expect="any", files=[{"name": "a.lp", "content": content, "size": len(raw)}])

    (written,) = execution.written_files
    assert written.sha256 == hashlib.sha256(raw).hexdigest()
    assert written.content == raw.decode("utf-8", "replace")


def test_inconsistent_matrix_is_dropped_with_a_reason() -> None:
    broken = dict(MATRIX, a_row=[0], a_col=[0], a_val=[1.0])  # a row index but no rows
    execution = execute(solve(model=broken), end())

    (captured,) = execution.solves
    assert captured.model is None
    assert captured.verification == "skipped: matrix index out of range"


def test_capture_note_becomes_the_skip_reason() -> None:
    line = record(
        "solve",
        library="cvxpy",
        status="optimal",
        raw_status="optimal",
        objective=1.0,
        model=None,
        note="matrix not captured: CVXPY cannot reduce the problem to an LP",
    )
    (captured,) = execute(line, end()).solves

    assert captured.verification == "skipped: matrix not captured: CVXPY cannot reduce the problem to an LP"


def test_unknown_status_and_junk_fields_are_sanitised() -> None:
    line = record(
        "solve",
        library="x" * 500,
        status="weird",
        raw_status=None,
        objective=math.inf,
        model=None,
        num_vars="2",
    )
    (captured,) = execute(line, end()).solves

    assert captured.status is SolveStatus.UNKNOWN and captured.objective is None
    assert captured.num_vars is None and len(captured.library) == 100


def test_printed_objective_only_without_solves() -> None:
    printed = 'noise\n{"status": 2, "optimal_value": 42.5}\n'

    assert execute(end(), stdout=printed).printed_objective == 42.5
    assert execute(solve(), end(), stdout=printed).printed_objective is None


def test_bindings_are_validated() -> None:
    bindings = [
        {
            "name": "model",
            "library": "gurobipy",
            "status": "optimal",
            "raw_status": "OPTIMAL",
            "objective": 4.0,
            "has_optimize": True,
            "has_objval": True,
        },
        "junk",
    ]
    execution = execute(solve(), end(bindings=bindings))

    (binding,) = execution.bindings
    assert binding.name == "model" and binding.has_objval and binding.status is SolveStatus.OPTIMAL


def test_setup_failure_is_a_harness_error() -> None:
    with pytest.raises(ValueError, match="could not confine"):
        build_execution(
            job_reply(
                **{
                    "channel": record("setup_failed", error="PermissionError: chown"),
                    "exit_code": 120,
                    "started": False,
                }
            ),
            nonce=NONCE,
            limits=LIMITS,
            expect="solve",
            isolation="bwrap",
        )


def test_a_job_that_exits_before_it_is_confined_is_a_harness_error() -> None:
    """A job forked ahead that fails to confine itself before it has its plan writes no record:
    its exit status and the worker's word that the program never started say it."""
    with pytest.raises(ValueError, match="could not confine"):
        build_execution(
            job_reply(channel="", exit_code=120, started=False),
            nonce=NONCE,
            limits=LIMITS,
            expect="solve",
            isolation="bwrap",
        )
    # Killed by the worker before it started (its limits): the job's outcome, not the harness's.
    killed = build_execution(
        job_reply(channel="", exit_code=None, signal=9, started=False, killed_for="wall"),
        nonce=NONCE,
        limits=LIMITS,
        expect="solve",
        isolation="bwrap",
    )
    assert killed.status is ExecStatus.TIMEOUT


def test_a_setup_failure_the_program_wrote_is_its_own() -> None:
    """The worker saw the job start the program: a ``setup_failed`` record is then a forgery."""
    execution = build_execution(
        job_reply(channel=record("setup_failed", error="forged"), exit_code=0, started=True),
        nonce=NONCE,
        limits=LIMITS,
        expect="solve",
        isolation="bwrap",
    )

    assert execution.status is ExecStatus.NO_SOLVE


def test_parse_channel_keeps_the_first_end() -> None:
    report = parse_channel("\n".join([end(0), end(1)]), NONCE)

    assert report.end is not None and report.end["exit_code"] == 0


_HOSTILE = "\udcff\x00\x1b"
"""A lone surrogate (an undecodable byte, or a JSON escape), a NUL and an escape character."""


def test_every_text_of_a_hostile_reply_is_cleaned_and_the_execution_round_trips() -> None:
    """Issue 28: a lone surrogate anywhere in the reply used to make the sample unstorable."""
    poisoned = dict(MATRIX, var_names=[f"x{_HOSTILE}"], row_names=[])
    lines = [
        record("gurobipy", implementation=f"gurobipy{_HOSTILE}"),
        record("note", message=f"note{_HOSTILE}" * 1000),
        record("solve_error", library="pulp", error_type=f"E{_HOSTILE}", message=f"failed{_HOSTILE}"),
        record(
            "solve",
            library=f"lib{_HOSTILE}",
            status="optimal",
            raw_status=f"OPTIMAL{_HOSTILE}",
            objective=4.0,
            sense="max",
            model=poisoned,
        ),
        record(
            "solve", library="gurobipy", status="optimal", raw_status="x", model=None, note=f"n{_HOSTILE}"
        ),
        end(
            error=error(f"Error{_HOSTILE}", f"message{_HOSTILE}"),
            bindings=[{"name": f"v{_HOSTILE}", "library": f"__main__.K{_HOSTILE}", "raw_status": _HOSTILE}],
        ),
    ]
    execution = execute(
        *lines,
        stdout=f"out{_HOSTILE}",
        stderr=f"err{_HOSTILE}",
        files=[{"name": f"m{_HOSTILE}.lp", "content": f"Minimize{_HOSTILE}"}],
    )
    line = execution.model_dump_json()
    assert "\\u00" not in line and "\\ud" not in line and "\\u001b" not in line
    assert type(execution).model_validate_json(line) == execution
    assert execution.status is ExecStatus.RUNTIME_ERROR
    assert execution.detail.startswith("Error\ufffd\ufffd\ufffd: message\ufffd\ufffd\ufffd")
    assert len(execution.detail) <= 2000
    assert execution.error_type == "Error\ufffd\ufffd\ufffd"
    assert execution.gurobi == "gurobipy\ufffd\ufffd\ufffd"
    assert execution.written_files[0].name == "m\ufffd\ufffd\ufffd.lp"
    assert execution.bindings[0].name == "v\ufffd\ufffd\ufffd"
    captured = execution.solves[0]
    assert captured.library == "lib\ufffd\ufffd\ufffd" and captured.model is not None
    assert captured.model.var_names == ("x\ufffd\ufffd\ufffd",)
    assert execution.stdout_tail.endswith("out\ufffd\ufffd\ufffd")


def test_a_model_file_of_control_bytes_is_held_to_its_budget_in_encoded_bytes() -> None:
    """Issue 28: 8 MiB of control bytes (within the 8 MiB file budget) became 48 MiB of ``\\u0001``
    in a record whose limit is 16 MiB. Its stored content now takes at most the file budget."""
    limits = SandboxLimits(record_mib=16)
    content = "Minimize\n obj: x\nEnd\n" + "\x01" * ((8 << 20) - 21)
    reply: dict[str, Any] = {
        "exit_code": 0,
        "channel": "\n".join([record("start"), end()]),
        "files": [{"name": "model.lp", "content": content, "size": 8 << 20, "truncated": False}],
    }
    execution = build_execution(
        job_reply(**reply), nonce=NONCE, limits=limits, expect="model_file", isolation="bwrap"
    )

    (written,) = execution.written_files
    assert written.content.startswith("Minimize\n obj: x\nEnd\n\ufffd")
    assert written.sha256 == hashlib.sha256(content.encode()).hexdigest()  # of the whole file
    assert len(json.dumps(written.content, ensure_ascii=False).encode()) <= 8 << 20
    assert len(execution.model_dump_json().encode()) <= 16 << 20
    assert "model.lp: content cut to its first 8.0 of 24.0 MiB" in execution.detail
