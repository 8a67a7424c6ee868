"""`trex-eval audit`: the benchmarks' own reference solutions through the whole pipeline."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trex_eval.run.audit import AuditResult, audit, known_issues

# Reference-harness §1.3/§1.4: the Feasible items whose models are quadratic (non-convex objective
# or quadratic constraints), which only real Gurobi can solve.
QUADRATIC_FEASIBLE = {f"BENCH4OPT_{i}" for i in (32, 33, 56, 57, 364, 365, 374, 375)}


def _rows(result: AuditResult) -> dict[tuple[str, str], dict[str, str]]:
    return {(r["benchmark"], r["id"]): r for r in csv.DictReader(result.csv_path.open())}


@pytest.fixture(scope="module")
def default_audit(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> AuditResult:
    return audit(None, data_dir=data_dir, results_dir=tmp_path_factory.mktemp("audit"), show_progress=False)


@pytest.mark.slow
def test_default_audit_fails_only_documented_items(default_audit: AuditResult) -> None:
    rows = list(_rows(default_audit).values())
    assert {r["benchmark"] for r in rows} == {"b4o-feasible", "b4o-orgeval"}
    assert len(rows) == 344 + 394
    failures = [r for r in rows if r["verdict"] != "correct"]
    issues = known_issues()
    assert all(r["id"] in issues[r["benchmark"]] and r["known_issue"] for r in failures)
    assert all(r["reason"] and r["rule"] for r in rows)
    assert "Failures without a documented data issue: none" in default_audit.markdown
    feasible_failures = sorted(r["id"] for r in failures if r["benchmark"] == "b4o-feasible")
    assert feasible_failures == ["BENCH4OPT_380", "BENCH4OPT_381"]  # label 30 vs model optimum 0.14448


@pytest.mark.slow
def test_licence_free_gurobipy_gives_the_same_audit_but_for_quadratic_models(
    default_audit: AuditResult, tmp_path: Path, data_dir: Path
) -> None:
    """Issue 8: every reference solution run with real gurobipy hidden from the sandbox."""
    highs = audit(None, data_dir=data_dir, gurobi="highs", results_dir=tmp_path, show_progress=False)
    real, hidden = _rows(default_audit), _rows(highs)
    assert real.keys() == hidden.keys()
    differ = {key for key in real if real[key]["verdict"] != hidden[key]["verdict"]}
    assert differ == {("b4o-feasible", item) for item in QUADRATIC_FEASIBLE}
    assert {hidden[key]["verdict"] for key in differ} == {"needs_gurobi"}
    assert all(real[key]["verdict"] == "correct" for key in differ)


@pytest.mark.slow
def test_compat_audit_reproduces_the_published_protocol(tmp_path: Path, data_dir: Path) -> None:
    """G13 (336/344 with the listed misses) and G9 (234/394) through extraction, rewriting,
    sandbox and grader, exactly as `trex-eval audit --protocol trex-compat` runs them."""
    result = audit(None, data_dir=data_dir, protocol="trex-compat", results_dir=tmp_path, show_progress=False)
    rows = list(_rows(result).values())
    feasible = [r for r in rows if r["benchmark"] == "b4o-feasible"]
    orgeval = [r for r in rows if r["benchmark"] == "b4o-orgeval"]
    assert sum(r["verdict"] == "correct" for r in feasible) == 336
    assert sorted(int(r["id"].split("_")[1]) for r in feasible if r["verdict"] != "correct") == [
        32,
        33,
        138,
        139,
        364,
        365,
        380,
        381,
    ]
    assert sum(r["verdict"] == "correct" for r in orgeval) == 234
    assert result.csv_path == result.run_dir / "audit.csv" and result.published == ()


def test_audit_writes_a_run_directory_and_publishes_only_when_asked(tmp_path: Path, data_dir: Path) -> None:
    """Issue 16: `trex-eval audit nl4opt` used to overwrite the committed results/audit-default.csv."""
    from cli_process import trex_eval

    done = trex_eval(
        "audit", "nl4opt", "--no-progress", "--data-dir", str(data_dir), cwd=tmp_path, timeout=600
    )
    (run_dir,) = (tmp_path / "results").iterdir()
    assert run_dir.name.startswith("audit-default-") and (run_dir / "manifest.json").is_file()
    rows = list(csv.DictReader((run_dir / "audit.csv").open()))
    assert len(rows) == 289 and (run_dir / "audit.md").read_text().startswith("# Reference-solution audit")
    assert f"per-item CSV: {Path('results') / run_dir.name / 'audit.csv'}" in done.stdout
    published = audit(
        ["nl4opt"], data_dir=data_dir, results_dir=tmp_path / "results", out=tmp_path / "again",
        publish=True, show_progress=False,
    )  # fmt: skip
    assert published.published == (tmp_path / "results" / "published" / "audit-default.csv",)
    assert published.published[0].read_text() == published.csv_path.read_text()


def test_an_audit_takes_a_benchmark_by_its_yaml_path(tmp_path: Path) -> None:
    """`audit([path to a YAML])` raised KeyError: records carry the spec's name, not the path."""
    spec = Path(__file__).resolve().parents[2] / "examples" / "or-word-problems" / "benchmark.yaml"
    done = audit([str(spec)], data_dir=None, out=tmp_path / "run", show_progress=False)
    assert {row["benchmark"] for row in done.rows} == {"or-word-problems"} and len(done.rows) == 10
