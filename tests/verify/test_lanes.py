"""The verifier processes: a program's model file is read there once, under a CPU budget, a reading
over budget is the sample's failure (not the harness's, not the next sample's), and a verifier that
cannot serve this harness is a harness error, never a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

import trex_eval.verify.lanes as lanes_module
from trex_eval.errors import GradingError
from trex_eval.verify import ModelFileRefused, read_model_file
from trex_eval.verify.lanes import VerifierError, VerifierLanes

SMALL_LP = """Maximize
 obj: 3 x + 2 y
Subject To
 c1: x + y <= 4
 c2: x + 3 y <= 6
Bounds
 x <= 3
End
"""


def _large_lp(rows: int) -> str:
    """An LP of ``rows`` rows over three variables (~1.6 CPU s to read 90,000 of them here)."""
    body = "\n".join(f" c{i}: 2 x + 3 y + {i % 7 + 1} z >= {i % 7 + 1}" for i in range(rows))
    return f"Minimize\n obj: x + y\nSubject To\n{body}\nEnd\n"


def test_a_model_file_is_read_in_a_verifier_and_only_once() -> None:
    first = read_model_file(SMALL_LP, name="model.lp", budget_s=10.0)
    again = read_model_file(SMALL_LP, name="model.lp", budget_s=10.0)

    assert first.sense == "max" and first.var_names == ("x", "y") and first.row_upper == (4.0, 6.0)
    assert again is first  # the grade and its diagnosis share one reading


def test_an_unreadable_file_is_the_samples_failure_with_the_readers_message() -> None:
    with pytest.raises(GradingError, match="line"):
        read_model_file("Maximize\n obj: 3 x +\nSubject To\n c1: x <=\n", name="bad.lp", budget_s=10.0)


def test_a_file_too_slow_to_read_within_its_budget_is_refused_and_the_next_is_read() -> None:
    # 0.2 CPU s (the kernel's whole seconds make it at most 1.2) against ~1.6 CPU s of reading.
    with pytest.raises(ModelFileRefused, match=r"could not be read within its budget.*0\.2 CPU s"):
        read_model_file(_large_lp(90_000), name="slow.lp", budget_s=0.2)
    # The verifier that ran out was replaced; the next sample's file is read as usual.
    assert read_model_file(SMALL_LP, name="next.lp", budget_s=10.0).sense == "max"


def test_a_file_over_the_size_caps_is_refused_while_it_is_read() -> None:
    with pytest.raises(ModelFileRefused, match="MAX_ROWS = 100,000"):
        read_model_file(_large_lp(100_001), name="huge.lp", budget_s=60.0)


def test_a_verifier_speaking_another_protocol_is_a_harness_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes_module, "PROTOCOL", lanes_module.PROTOCOL + 1)
    lanes = VerifierLanes(size=1)
    try:
        with pytest.raises(VerifierError, match="changed on disk while it ran"):
            lanes.gurobi_available()
    finally:
        lanes.close()


def test_a_tenants_first_re_solve_does_not_wait_for_another_tenants_long_ones() -> None:
    """The resolve-hog: one request's re-solves that take seconds each, an honest request's tiny one
    sent just after. The reserve process serves the request that holds none at once."""
    import threading
    import time

    from test_budgets import market_split

    from trex_eval import fairness
    from trex_eval.verify.views import model_view

    hard, tiny = model_view(market_split(4, 24)), model_view(market_split(2, 6))
    lanes = VerifierLanes(size=2, reserve=1)  # one process for work, one kept for newcomers
    try:
        lanes.warm()
        hog_done: list[float] = []

        def hog() -> None:
            with fairness.scope("hog"):
                lanes.resolve(hard, prefer_gurobi=False, budget_s=30.0)
                hog_done.append(time.monotonic())

        hogs = [threading.Thread(target=hog) for _ in range(2)]
        for thread in hogs:
            thread.start()
        time.sleep(0.5)
        started = time.monotonic()
        with fairness.scope("honest"):
            verdict = lanes.resolve(tiny, prefer_gurobi=False, budget_s=10.0)
        answered = time.monotonic()
        for thread in hogs:
            thread.join(120)
        assert verdict.objective is not None
        # Answered while the first hog re-solve (seconds of CPU) was still running.
        assert hog_done and answered < min(hog_done), (answered - started, [t - started for t in hog_done])
    finally:
        lanes.close()


def test_a_remembered_verdict_is_not_handed_to_an_asker_with_a_smaller_budget() -> None:
    """One sample's larger budget must not buy another sample a verdict its own budget would not."""
    from trex_eval.records import SolveStatus
    from trex_eval.verify import Resolve, _Memo

    memo = _Memo(4)
    dear = Resolve(SolveStatus.OPTIMAL, 1.0, "kOptimal", "highs", cpu_s=5.0)
    calls: list[float] = []

    def solve(budget: float) -> Resolve:
        calls.append(budget)
        return dear if budget >= 5.0 else Resolve(SolveStatus.TIME_LIMIT, None, "budget", "highs")

    assert memo.get((b"m", False), lambda: solve(30.0), budget_s=30.0) is dear
    assert memo.get((b"m", False), lambda: solve(2.0), budget_s=2.0).status is SolveStatus.TIME_LIMIT
    assert memo.get((b"m", False), lambda: solve(10.0), budget_s=10.0) is dear  # remembered, fits
    assert calls == [30.0, 2.0]


def test_a_wait_for_another_tenants_re_solve_ends_at_the_askers_deadline() -> None:
    import threading
    import time

    from trex_eval import fairness
    from trex_eval.records import SolveStatus
    from trex_eval.verify import Resolve, _Memo

    memo = _Memo(4)
    started, release = threading.Event(), threading.Event()

    def slow() -> Resolve:
        started.set()
        release.wait(10.0)
        return Resolve(SolveStatus.OPTIMAL, 1.0, "kOptimal")

    first = threading.Thread(target=lambda: memo.get((b"k", False), slow))
    first.start()
    try:
        assert started.wait(5.0)
        with fairness.scope("late", deadline=time.monotonic() + 0.2), pytest.raises(fairness.DeadlinePassed):
            memo.get((b"k", False), slow)
    finally:
        release.set()
        first.join(5.0)


def test_a_structure_grade_of_a_file_it_did_not_read_is_not_determinable_not_wrong(data_dir: Path) -> None:
    """The program's LP file is over the caps: neither read nor compared, so no verdict on the model;
    a file the reader rejects as malformed stays ``wrong``."""
    from trex_eval.benchmarks import load_benchmark
    from trex_eval.protocols.judge import ReferenceModels
    from trex_eval.protocols.plan import plan_for
    from trex_eval.records import ExecStatus, Execution, Verdict, WrittenFile

    benchmark = load_benchmark("b4o-orgeval", data_dir=data_dir)
    plan, problem = plan_for(benchmark), benchmark.problems[0]

    def graded(text: str) -> Verdict:
        written = WrittenFile(name="model.lp", content=text, sha256="0")
        execution = Execution(status=ExecStatus.OK, written_files=(written,), cpu_s=0.1)
        return plan.grade(problem, execution, reference_model=ReferenceModels()).verdict

    assert graded(_large_lp(100_001)) is Verdict.NOT_DETERMINABLE
    assert graded("Maximize\n obj: 3 x +\nSubject To\n c1: x <=\n") is Verdict.WRONG


def test_each_refusal_of_a_verifier_means_one_thing() -> None:
    """A solver's refusal keeps its own words (it becomes the ``skipped: ...`` reason); an
    installation's failure is the harness's error, never a verdict."""
    from trex_eval.verify import OutOfTime, Unsolvable
    from trex_eval.verify.lanes import _verdict

    def refused(kind: str) -> dict[str, object]:
        return {"refused": kind, "message": f"{kind} words", "solver": "highs"}

    with pytest.raises(Unsolvable) as solver_said:
        _verdict(refused("unsolvable"))
    assert str(solver_said.value) == "unsolvable words"
    with pytest.raises(VerifierError, match="harness words"):
        _verdict(refused("harness"))
    with pytest.raises(OutOfTime, match="out_of_time words"):
        _verdict(refused("out_of_time"))
    with pytest.raises(Unsolvable, match=r"re-solve failed \(failed words\)"):
        _verdict(refused("failed"))
