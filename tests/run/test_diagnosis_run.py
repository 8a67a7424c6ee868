"""Diagnoses end to end: a run stores them, ``grade --diagnose`` adds them to a stored run without
running a program again, the summary counts them and ``compare`` shows the transitions."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

from cli_process import trex_eval

from trex_eval.backends.base import BackendSpec
from trex_eval.records import DiagnosisCategory, SamplingParams, Verdict
from trex_eval.report import compare_runs, load_runs, render_comparison_markdown, render_html_report
from trex_eval.run import pipeline
from trex_eval.run.regrade import CompletionFields, plan_regrade, run_regrade
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

HEAD = "import gurobipy as gp\nfrom gurobipy import GRB\nm = gp.Model()\nx = m.addVar()\n"


def _program(bound: float, sense: str = "MAXIMIZE") -> str:
    return f"```python\n{HEAD}m.addConstr(x <= {bound})\nm.setObjective(x, GRB.{sense})\nm.optimize()\n```"


# nl4opt items 0, 1, 2 have the references 3000, 5050 and 150000.
BASE = {
    "0": _program(3000, "MINIMIZE"),  # sense flipped
    "1": _program(5050),  # correct
    "2": "```python\ndata = {}\nprint(data['budget'])\n```",  # data access
}
TRAINED = {**BASE, "0": _program(3000), "1": _program(50.5)}  # 0 fixed, 1 now off by 10^2


def _replayed(tmp_path: Path, name: str, answers: dict[str, str], data_dir: Path, *, diagnose: bool) -> Path:
    recorded = tmp_path / f"{name}.jsonl"
    recorded.write_text(
        "".join(json.dumps({"problem_id": i, "completion": t}) + "\n" for i, t in answers.items())
    )
    model = BackendSpec(
        name=name, backend="replay", model=name, options={"path": str(recorded)}, sampling=SamplingParams()
    )
    result = pipeline.run(
        RunSpec(model=model, benchmarks=("nl4opt",), limit=3),
        RunOptions(data_dir=data_dir, out=tmp_path / name, show_progress=False, diagnose=diagnose),
    )
    return result.run_dir


def _categories(run_dir: Path) -> dict[str, DiagnosisCategory | None]:
    return {
        r.problem_id: (r.grade.diagnosis.category if r.grade.diagnosis else None)
        for r in RunStore(run_dir).iter_samples()
    }


def test_regrade_diagnoses_a_stored_run_without_running_programs(tmp_path: Path, data_dir: Path) -> None:
    plain = _replayed(tmp_path, "base", BASE, data_dir, diagnose=False)
    assert _categories(plain) == {"0": None, "1": None, "2": None}
    regrade = plan_regrade(
        plain,
        data_dir=data_dir,
        rules=(),
        protocol="default",
        fields=CompletionFields(),
        out=tmp_path / "diagnosed",
        show_progress=False,
        diagnose=True,
    )
    (result,) = run_regrade(regrade)
    assert (result.executed_now, result.reused_now) == (0, 3)
    assert _categories(result.run_dir) == {
        "0": DiagnosisCategory.SENSE_FLIPPED,
        "1": None,
        "2": DiagnosisCategory.DATA_ACCESS,
    }
    verdicts = {r.problem_id: r.grade.verdict for r in RunStore(result.run_dir).iter_samples()}
    assert verdicts == {"0": Verdict.WRONG, "1": Verdict.CORRECT, "2": Verdict.RUNTIME_ERROR}
    (bench,) = result.summary.benchmarks
    assert bench.diagnoses == {"sense_flipped": 1, "data_access": 1}
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["benchmarks"][0]["diagnoses"] == {"sense_flipped": 1, "data_access": 1}
    markdown = (result.run_dir / "summary.md").read_text()
    assert "## Why samples failed (diagnoses)" in markdown and "| sense_flipped | 1 |" in markdown


def test_compare_shows_what_changed(tmp_path: Path, data_dir: Path) -> None:
    base = _replayed(tmp_path, "base", BASE, data_dir, diagnose=True)
    trained = _replayed(tmp_path, "trained", TRAINED, data_dir, diagnose=True)
    assert _categories(trained)["1"] is DiagnosisCategory.OBJECTIVE_SCALED
    result = compare_runs(load_runs([base, trained]), baseline=0)
    (pair,) = result.comparisons[0].benchmarks
    moves = {(t.source, t.target): t.count for t in pair.transitions}
    assert moves == {
        ("sense_flipped", "correct"): 1,
        ("correct", "objective_scaled"): 1,
        ("data_access", "data_access"): 1,
    }
    assert {(t.source, t.target): t.problems for t in pair.transitions}[("sense_flipped", "correct")] == (
        "0",
    )
    markdown = render_comparison_markdown(result)
    assert "| sense_flipped | correct | 1 |" in markdown and "| data_access | data_access |" not in markdown
    shown = trex_eval("compare", str(base), str(trained), columns=160, cwd=tmp_path)
    assert "sense_flipped" in shown.stdout and "objective_scaled" in shown.stdout

    page = render_html_report(load_runs([base, trained]))
    assert '<section id="diagnoses">' in page
    assert re.search(r'<span title="sense_flipped: 1"', page)  # the base run's stacked bar
    transitions = page[page.index('<details class="transitions">') :]
    assert "<td>sense_flipped</td><td>correct</td>" in transitions
    assert 'data-bench="' in transitions and 'data-pid="0">0</a>' in transitions  # opens problem 0
    assert "<td>data_access</td><td>data_access</td>" not in transitions  # unchanged: not listed
    blob = re.search(r'<script type="application/octet-stream" id="texts-0">([^<]+)</script>', page)
    assert blob is not None
    bodies = json.loads(gzip.decompress(base64.b64decode(blob.group(1))))["bodies"]
    assert any("diagnosis: <code>sense_flipped" in body for body in bodies)  # the problem's drill-down


def test_grade_cli_diagnose_flag(tmp_path: Path, data_dir: Path) -> None:
    plain = _replayed(tmp_path, "base", BASE, data_dir, diagnose=False)
    out = tmp_path / "graded"
    trex_eval(
        "grade",
        str(plain),
        "--diagnose",
        "-o",
        str(out),
        "--no-progress",
        "--data-dir",
        str(data_dir),
        cwd=tmp_path,
    )
    assert _categories(out)["0"] is DiagnosisCategory.SENSE_FLIPPED
    skipped = tmp_path / "skipped"
    trex_eval(
        "grade",
        str(plain),
        "--no-diagnose",
        "-o",
        str(skipped),
        "--no-progress",
        "--data-dir",
        str(data_dir),
        cwd=tmp_path,
    )
    assert set(_categories(skipped).values()) == {None}
