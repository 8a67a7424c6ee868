"""The repair protocol (`run --repair N`) end to end: a scripted stand-in model on loopback answers
real NL4OPT problems with broken programs first and fixed ones after the feedback; the real
sandbox runs them and the real rules grade every round."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fake_server import Action, Delay, FakeOpenAIServer, Reply, Status

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import StoreError
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    ObjectiveReference,
    Problem,
    Program,
    SampleRecord,
    SamplingParams,
    SolveRecord,
    SolveStatus,
    StructureReference,
    Verdict,
)
from trex_eval.report import load_runs, render_comparison_markdown, render_html_report
from trex_eval.report.compare import compare_runs
from trex_eval.report.compare_table import comparison_frame
from trex_eval.report.summary import summarize
from trex_eval.run import pipeline as runner
from trex_eval.run.regrade import CompletionFields, plan_regrade, run_regrade
from trex_eval.run.repair import RepairTemplate, repair_need
from trex_eval.run.spec import RepairSettings, RunOptions, RunSpec
from trex_eval.store import RunStore

_MARK = re.compile(r"case P(\d)")


def _fence(code: str) -> str:
    return f"Here is the program.\n\n```python\n{code.rstrip()}\n```"


def _infeasible(i: int) -> str:
    return (
        f"import pulp\nprint('case P{i}')\nm = pulp.LpProblem('m', pulp.LpMinimize)\n"
        "x = pulp.LpVariable('x')\nm += x\nm += x >= 1\nm += x <= 0\nm.solve(pulp.PULP_CBC_CMD(msg=0))\n"
    )


def _wrong_optimum(i: int) -> str:
    # Solved to optimality with an objective that is not the reference's: never fed back.
    return (
        f"import pulp\nprint('case P{i}')\nm = pulp.LpProblem('m', pulp.LpMinimize)\n"
        "x = pulp.LpVariable('x')\nm += x\nm += x >= 1.5\nm.solve(pulp.PULP_CBC_CMD(msg=0))\n"
    )


# Round 0 of problems 0..5: right at once, a syntax error, a runtime error, no solve at all, an
# infeasible model (the reference has an optimum), and a wrong optimum.
_FIRST: dict[int, Callable[[int], str]] = {
    1: lambda i: f"import pulp\nx = (1 +  # case P{i}\nprint(x)\n",
    2: lambda i: f"print('case P{i}')\nraise ValueError('the data for case P{i} is missing')\n",
    3: lambda i: f"print('case P{i}: the optimum is obvious')\n",
    4: _infeasible,
    5: _wrong_optimum,
}


class _Model:
    """The scripted stand-in: ``script(key, attempt)`` answers by the last message (the problem's
    prompt in round 0, the harness's feedback after it), which names the case through the
    program's own output. ``hang`` holds back the answers to the feedback messages it matches."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = problems
        self.hang: Callable[[str], bool] = lambda key: False

    def correct(self, i: int) -> str:
        return reference_completion_text(self.problems[i], libraries=("pulp",))

    def script(self, key: str, attempt: int) -> Action:
        found = _MARK.search(key)
        if found is None:  # round 0: the problem's own prompt
            i = next(i for i, p in enumerate(self.problems) if p.question.strip()[:120] in key)
            return Reply(text=self.correct(i) if i not in _FIRST else _fence(_FIRST[i](i)))
        if self.hang(key):
            return Delay(300)  # the server answers once the test is done with it
        i = int(found.group(1))
        if i == 4 and "infeasible" in key:  # the first fix of the infeasible model fails again
            return Reply(text=_fence(f"raise RuntimeError('case P{i} still broken')"))
        return Reply(text=self.correct(i))


def _spec(base_url: str, *, limit: int, rounds: int = 2, benchmark: str = "nl4opt") -> RunSpec:
    model = BackendSpec(
        name="stand-in",
        backend="openai",
        model="served-model",
        options={"base_url": base_url, "verify_model": False, "concurrency": 4},
        sampling=SamplingParams(),
    )
    return RunSpec(
        model=model,
        benchmarks=(benchmark,),
        limit=limit,
        prompt_set="neutral",
        repair=RepairSettings(rounds=rounds),
    )


def _feedback_messages(server: FakeOpenAIServer) -> list[str]:
    """Every feedback message the model was sent: the user turns after the first one."""
    found = []
    for seen in server.chat_requests():
        users = [m["content"] for m in (seen.body or {}).get("messages", []) if m["role"] == "user"]
        found += users[1:]
    return found


def _assert_no_label(problems: Sequence[Problem], messages: Sequence[str]) -> None:
    for problem in problems:
        reference = problem.reference
        assert isinstance(reference, ObjectiveReference) and reference.value is not None
        value = reference.value
        forms = {reference.label, repr(value), f"{value:g}"} | (
            {str(int(value))} if value.is_integer() else set()
        )
        for message in messages:
            for form in forms:
                assert form not in message, f"feedback quotes the reference {form!r}: {message!r}"


def test_repair_rounds_over_nl4opt(tmp_path: Path, data_dir: Path) -> None:
    problems = load_benchmark("nl4opt", data_dir=data_dir).problems[:6]
    model = _Model(problems)
    with FakeOpenAIServer(model.script) as server:
        result = runner.run(
            _spec(server.base_url, limit=6),
            RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False),
        )
        feedback_sent = _feedback_messages(server)
    records = {r.problem_id: r for r in RunStore(tmp_path / "run").iter_samples()}
    ids = [p.id for p in problems]
    # Round 0 is the zero-shot answer: only problem 0 is right at once.
    assert [records[i].grade.verdict for i in ids] == [
        Verdict.CORRECT,
        Verdict.SYNTAX_ERROR,
        Verdict.RUNTIME_ERROR,
        Verdict.NO_SOLVE,
        Verdict.WRONG,
        Verdict.WRONG,
    ]
    rounds = {i: [(r.round, r.failure, r.grade.verdict) for r in records[i].rounds] for i in ids}
    assert rounds == {
        ids[0]: [],
        ids[1]: [(1, "syntax_error", Verdict.CORRECT)],
        ids[2]: [(1, "runtime_error", Verdict.CORRECT)],
        ids[3]: [(1, "no_solve", Verdict.CORRECT)],
        ids[4]: [(1, "infeasible", Verdict.RUNTIME_ERROR), (2, "runtime_error", Verdict.CORRECT)],
        ids[5]: [],  # a wrong optimum is never fed back: that would leak the label
    }
    # What each round was asked: the conversation grows by the answer and its feedback.
    stored = [json.loads(line) for line in (tmp_path / "run" / "completions.jsonl").read_text().splitlines()]
    by_round = sorted((line["completion"]["problem_id"], line["round"]) for line in stored)
    assert by_round == sorted(
        [(i, 0) for i in ids] + [(ids[1], 1), (ids[2], 1), (ids[3], 1), (ids[4], 1), (ids[4], 2)]
    )
    last = next(line for line in stored if line["round"] == 2)
    roles = [m["role"] for m in last["prompt"]["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    p4 = records[ids[4]]
    assert last["prompt"]["messages"][3]["content"] == p4.rounds[0].feedback
    assert last["prompt"]["messages"][5]["content"] == p4.rounds[1].feedback
    assert last["prompt"]["messages"][2]["content"] == p4.completion.text
    # The feedback states what the program did, from the template, and nothing about the label.
    assert "syntax error" in records[ids[1]].rounds[0].feedback
    assert "x = (1 +  # case P1" in records[ids[1]].rounds[0].feedback
    assert "ValueError: the data for case P2 is missing" in records[ids[2]].rounds[0].feedback
    assert "reported your model as infeasible" in p4.rounds[0].feedback
    assert "/tmp/job" not in p4.rounds[1].feedback and 'File "program.py"' in p4.rounds[1].feedback
    # (a round-2 request repeats the round-1 feedback: every request carries the whole conversation)
    assert set(feedback_sent) == {r.feedback for rec in records.values() for r in rec.rounds}
    _assert_no_label(problems, feedback_sent)
    # Scores per round: r0 is the zero-shot pass@1; requests count every round.
    bench = result.summary.benchmarks[0]
    assert bench.pass_at_1 == 1 / 6
    assert bench.repair is not None
    assert bench.repair.pass_at_1 == {0: 1 / 6, 1: 4 / 6, 2: 5 / 6}
    assert bench.repair.asked == {1: 4, 2: 1}
    assert bench.repair.requests == 11 == result.generated_now
    assert bench.repair.solved_samples == 5
    assert {k: (v.samples, v.repaired) for k, v in bench.repair.by_failure.items()} == {
        "infeasible": (1, 1),
        "no_solve": (1, 1),
        "runtime_error": (1, 1),
        "syntax_error": (1, 1),
    }
    markdown = (tmp_path / "run" / "summary.md").read_text()
    assert "| pass@1@r0 | pass@1@r1 | pass@1@r2 |" in markdown
    manifest = RunStore(tmp_path / "run").read_manifest()
    assert manifest.settings.repair == 2 and manifest.settings.repair_feedback == "execution"
    assert manifest.settings.repair_template_sha256 == RepairTemplate().sha256


def test_repair_of_structure_graded_programs(tmp_path: Path, data_dir: Path) -> None:
    # B4O-ORGEval: the program must write its model; the structure rule grades every round.
    problems = load_benchmark("b4o-orgeval", data_dir=data_dir).problems[:3]
    broken = {
        1: lambda i: f"import gurobipy as gp\nm = gp.Model(  # case P{i}\n",
        2: lambda i: f"print('case P{i}: the model is clear enough without writing it')\n",
    }

    def script(key: str, attempt: int) -> Action:
        found = _MARK.search(key)
        if found is None:
            i = next(i for i, p in enumerate(problems) if p.question.strip()[:120] in key)
            return Reply(text=_fence(broken[i](i)) if i in broken else reference_completion_text(problems[i]))
        return Reply(text=reference_completion_text(problems[int(found.group(1))]))

    with FakeOpenAIServer(script) as server:
        result = runner.run(
            _spec(server.base_url, limit=3, rounds=1, benchmark="b4o-orgeval"),
            RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False),
        )
        feedback_sent = _feedback_messages(server)
    records = {r.problem_id: r for r in RunStore(tmp_path / "run").iter_samples()}
    ids = [p.id for p in problems]
    assert [records[i].grade.verdict for i in ids] == [
        Verdict.CORRECT,
        Verdict.SYNTAX_ERROR,
        Verdict.NO_SOLVE,
    ]
    assert {i: [(r.failure, r.grade.verdict, r.grade.rule) for r in records[i].rounds] for i in ids} == {
        ids[0]: [],
        ids[1]: [("syntax_error", Verdict.CORRECT, records[ids[0]].grade.rule)],
        ids[2]: [("no_solve", Verdict.CORRECT, records[ids[0]].grade.rule)],
    }
    assert records[ids[0]].grade.rule.startswith("orgeval-exact@")
    bench = result.summary.benchmarks[0]
    assert bench.repair is not None and bench.repair.pass_at_1 == {0: 1 / 3, 1: 1.0}
    # The feedback never quotes the reference model: no line of any reference LP file appears.
    assert len(feedback_sent) == 2
    for problem in problems:
        reference = problem.reference
        assert isinstance(reference, StructureReference)
        lines = {
            line.strip()
            for line in Path(reference.lp_path).read_text().splitlines()
            if len(line.strip()) > 12
        }
        for message in feedback_sent:
            assert not [line for line in lines if line in message], message


def test_zero_rounds_is_the_zero_shot_protocol(tmp_path: Path, data_dir: Path) -> None:
    problems = load_benchmark("nl4opt", data_dir=data_dir).problems[:3]
    model = _Model(problems)
    with FakeOpenAIServer(model.script) as server:
        plain = runner.run(
            _spec(server.base_url, limit=3, rounds=0),
            RunOptions(data_dir=data_dir, out=tmp_path / "plain", show_progress=False),
        )
        repaired = runner.run(
            _spec(server.base_url, limit=3, rounds=1),
            RunOptions(data_dir=data_dir, out=tmp_path / "repaired", show_progress=False),
        )
        # Another number of rounds is another run: a resume with it is refused.
        try:
            runner.run(
                _spec(server.base_url, limit=3, rounds=2),
                RunOptions(data_dir=data_dir, out=tmp_path / "repaired", show_progress=False),
            )
        except StoreError as error:
            assert "repair was 1, now 2" in str(error)
        else:
            raise AssertionError("a resume with other repair settings was accepted")
    plain_records = list(RunStore(tmp_path / "plain").iter_samples())
    assert all(not r.rounds for r in plain_records) and plain.summary.benchmarks[0].repair is None
    line = (tmp_path / "plain" / "samples.jsonl").read_text().splitlines()[0]
    assert SampleRecord.model_validate_json(line).rounds == ()
    settings = RunStore(tmp_path / "plain").read_manifest().settings
    assert (settings.repair, settings.repair_template_sha256) == (0, None)
    bench = repaired.summary.benchmarks[0]
    assert bench.repair is not None and bench.pass_at_1 == plain.summary.benchmarks[0].pass_at_1
    assert bench.repair.pass_at_1[0] == bench.pass_at_1 < bench.repair.pass_at_1[1]
    # compare: the zero-shot answers are paired as for any run; the repaired scores stand apart.
    comparison = compare_runs(load_runs([tmp_path / "plain", tmp_path / "repaired"]))
    pair = comparison.comparisons[0].benchmarks[0]
    assert (pair.baseline_pass_at_1, pair.candidate_pass_at_1, pair.difference) == (1 / 3, 1 / 3, 0.0)
    assert pair.repaired is not None
    assert pair.repaired.baseline_rounds == (1 / 3,)
    assert pair.repaired.candidate_rounds == (1 / 3, 1.0)
    assert abs(pair.repaired.difference - 2 / 3) < 1e-12
    row = comparison_frame(comparison).iloc[0]
    assert (row["diff_pp"], row["candidate_repair_rounds"], round(row["repaired_diff_pp"], 9)) == (
        0.0,
        1,
        round(200 / 3, 9),
    )
    markdown = render_comparison_markdown(comparison)
    assert "| nl4opt | 33.33 | 33.33 → 100.00 | +66.67 [" in markdown
    page = render_html_report(load_runs([tmp_path / "plain", tmp_path / "repaired"]))
    repaired_section = page[
        page.index('<section id="repaired">') : page.index("</section>", page.index('id="repaired"'))
    ]
    assert '<th class="num">pass@1@r1</th>' in repaired_section and "repair 1" in repaired_section
    assert '<td class="num">33.33</td><td class="num">100.00</td>' in re.sub(r"\s+<", "<", repaired_section)
    assert "33.33 → 100.00" in page[page.index('class="after-repair"') :]


def test_resume_after_kill_9_mid_round(tmp_path: Path, data_dir: Path) -> None:
    """Killed while round 1 of problem 3 and round 2 of problem 4 are being generated: the resumed
    run asks only for those two; every stored round (round 0 of all, round 1 of the others) is
    reused, and the result equals an uninterrupted run's."""
    problems = load_benchmark("nl4opt", data_dir=data_dir).problems[:5]
    model = _Model(problems)
    model.hang = lambda key: "case P3" in key or ("case P4" in key and "still broken" in key)
    run_dir = tmp_path / "killed"
    with FakeOpenAIServer(model.script) as server:
        args = [
            *("run", "--base-url", server.base_url, "--model", "openai-compatible/served-model"),
            *("--opt", "verify_model=false", "-b", "nl4opt", "-n", "5", "--prompt-set", "neutral"),
            *("--repair", "2", "--no-progress", "--data-dir", str(data_dir), "--out", str(run_dir)),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "trex_eval", *args],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:

            def waiting() -> bool:
                keys = [seen.key or "" for seen in server.chat_requests()]
                samples = run_dir / "samples.jsonl"
                done = len(samples.read_text().splitlines()) if samples.exists() else 0
                return (
                    done == 3 and any("case P3" in k for k in keys) and any("still broken" in k for k in keys)
                )

            deadline = time.monotonic() + 240
            while not waiting():
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
                assert time.monotonic() < deadline, "the run never reached the held-back rounds"
                time.sleep(0.2)
            os.kill(proc.pid, signal.SIGKILL)  # the harness only, as a user or the OOM killer would
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        # 5 first answers, round 1 of problems 1, 2 and 4 (answered) and of problem 3 (held back),
        # round 2 of problem 4 (held back).
        before = len(server.chat_requests())
        assert before == 10
        model.hang = lambda key: False
        resumed = runner.run(
            runner.resume_spec(run_dir), RunOptions(data_dir=data_dir, out=run_dir, show_progress=False)
        )
        after = [seen.key or "" for seen in server.chat_requests()]
    asked_again = after[before:]
    assert len(asked_again) == 2 == resumed.generated_now
    assert (
        sum("case P3" in k for k in asked_again) == 1 and sum("still broken" in k for k in asked_again) == 1
    )
    records = {r.problem_id: r for r in RunStore(run_dir).iter_samples()}
    assert len(records) == 5
    assert [len(records[p.id].rounds) for p in problems] == [0, 1, 1, 1, 2]
    assert all(records[p.id].grade_after(2).passed for p in problems)
    bench = resumed.summary.benchmarks[0]
    assert bench.repair is not None and bench.repair.pass_at_1 == {0: 0.2, 1: 0.8, 2: 1.0}


def test_a_failed_request_in_a_repair_round_is_asked_again_on_resume(tmp_path: Path, data_dir: Path) -> None:
    # Round 1's request is refused (HTTP 400, not retried): the rounds end with an API error and
    # the sample is counted failed after round 1; a resume asks that round only, not round 0.
    problems = load_benchmark("nl4opt", data_dir=data_dir).problems[:3]
    model = _Model(problems)
    refuse = [True]

    def script(key: str, attempt: int) -> Action:
        if refuse[0] and _MARK.search(key):
            return Status(400)
        return model.script(key, attempt)

    run_dir = tmp_path / "run"
    with FakeOpenAIServer(script) as server:
        first = runner.run(
            _spec(server.base_url, limit=3, rounds=1),
            RunOptions(data_dir=data_dir, out=run_dir, show_progress=False),
        )
        records = {r.problem_id: r for r in RunStore(run_dir).iter_samples()}
        ids = [p.id for p in problems]
        assert [[(r.failure, r.grade.verdict) for r in records[i].rounds] for i in ids] == [
            [],
            [("syntax_error", Verdict.API_ERROR)],
            [("runtime_error", Verdict.API_ERROR)],
        ]
        bench = first.summary.benchmarks[0]
        assert bench.repair is not None and bench.repair.pass_at_1 == {0: 1 / 3, 1: 1 / 3}
        before = len(server.chat_requests())
        refuse[0] = False
        resumed = runner.run(
            runner.resume_spec(run_dir), RunOptions(data_dir=data_dir, out=run_dir, show_progress=False)
        )
        asked_again = [seen.key or "" for seen in server.chat_requests()][before:]
    assert len(asked_again) == 2 and all(_MARK.search(key) for key in asked_again)
    records = {r.problem_id: r for r in RunStore(run_dir).iter_samples()}
    assert [[r.grade.verdict for r in records[i].rounds] for i in ids] == [
        [],
        [Verdict.CORRECT],
        [Verdict.CORRECT],
    ]
    bench = resumed.summary.benchmarks[0]
    assert bench.repair is not None and bench.repair.pass_at_1 == {0: 1 / 3, 1: 1.0}


def test_what_is_repaired_never_depends_on_the_label(data_dir: Path) -> None:
    problem = load_benchmark("nl4opt", data_dir=data_dir).problems[0]
    infeasible_reference = problem.model_copy(
        update={
            "reference": ObjectiveReference(status=SolveStatus.INFEASIBLE, value=None, label="infeasible")
        }
    )
    program = Program(code="print(1)", extractor="default", reason="last fence")

    def solved(status: SolveStatus, objective: float | None) -> Execution:
        solve = SolveRecord(library="pulp", status=status, raw_status=status.value, objective=objective)
        return Execution(status=ExecStatus.OK, solves=(solve,), stdout_tail="done\n")

    wrong = Grade(verdict=Verdict.WRONG, rule="strict@3", reason="1.5 vs reference 3000.0")
    kind = GraderKind.OBJECTIVE
    # A wrong optimum is not fed back, unless the study asks for objective-differs feedback.
    assert repair_need(problem, program, solved(SolveStatus.OPTIMAL, 1.5), wrong, grader=kind) is None
    differs = repair_need(
        problem, program, solved(SolveStatus.OPTIMAL, 1.5), wrong, grader=kind, mode="objective-differs"
    )
    assert differs is not None and differs.failure == "objective_differs"
    text = RepairTemplate().render(differs, round_index=1, rounds=2)
    assert "differs from the expected" in text and "3000" not in text
    # Infeasible is repaired only where the reference has an optimum.
    infeasible = solved(SolveStatus.INFEASIBLE, None)
    found = repair_need(problem, program, infeasible, wrong, grader=kind)
    assert found is not None and found.failure == "infeasible"
    assert repair_need(infeasible_reference, program, infeasible, wrong, grader=kind) is None
    # A solve that stopped early is repaired whatever the reference.
    early = repair_need(
        infeasible_reference, program, solved(SolveStatus.TIME_LIMIT, 7.0), wrong, grader=kind
    )
    assert early is not None and early.failure == "not_optimal"
    # Timeouts, no code; environment failures and correct samples are not.
    timeout = Execution(status=ExecStatus.TIMEOUT, detail="wall-clock limit 60 s", stderr_tail="x" * 5000)
    failed = Grade(verdict=Verdict.TIMEOUT, rule="strict@3", reason="program failed")
    facts = repair_need(problem, program, timeout, failed, grader=kind)
    assert facts is not None and facts.failure == "timeout" and len(facts.stderr) <= 400
    none = Program(code=None, extractor="default", reason="no ```python fence")
    no_code = Grade(verdict=Verdict.NO_CODE, rule="strict@3", reason="no code")
    found = repair_need(problem, none, Execution(status=ExecStatus.NO_CODE), no_code, grader=kind)
    assert found is not None and found.failure == "no_code" and found.message == "no ```python fence"
    licence = Grade(verdict=Verdict.LICENCE_ERROR, rule="strict@3", reason="licence")
    assert (
        repair_need(problem, program, Execution(status=ExecStatus.LICENCE_ERROR), licence, grader=kind)
        is None
    )
    right = Grade(verdict=Verdict.CORRECT, rule="strict@3", reason="ok")
    assert repair_need(problem, program, solved(SolveStatus.OPTIMAL, 3000.0), right, grader=kind) is None


def test_a_repair_run_regrades_round_by_round_from_its_completions(tmp_path: Path, data_dir: Path) -> None:
    """A repair run replayed from its own completions (`trex-eval grade RUN`) round by round gives
    the same round scores, without asking a model."""
    problems = load_benchmark("nl4opt", data_dir=data_dir).problems[:5]
    model = _Model(problems)
    with FakeOpenAIServer(model.script) as server:
        runner.run(
            _spec(server.base_url, limit=5),
            RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False),
        )
    regrade = plan_regrade(
        tmp_path / "run",
        data_dir=data_dir,
        rules=(),
        protocol="default",
        fields=CompletionFields(),
        out=tmp_path / "again",
        show_progress=False,
    )
    (result,) = run_regrade(regrade)
    original = summarize(
        RunStore(tmp_path / "run").read_manifest(), RunStore(tmp_path / "run").iter_samples()
    )
    assert result.generated_now == 10 and result.reused_now == 10  # 5 + 4 first repairs + 1
    first, second = original.benchmarks[0].repair, result.summary.benchmarks[0].repair
    assert first is not None and second is not None and first.pass_at_1 == second.pass_at_1
