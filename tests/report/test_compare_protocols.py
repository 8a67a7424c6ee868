"""`trex-eval compare RUN --protocol A --protocol B ...`: one run's completions under several
protocols, item by item.

A real ``replay`` run of the first five NL4OPT problems holds PuLP programs whose fate under each
convention is known from how they are written (each prints its objective):

* 0: correct, as written;
* 1: solves to the reference optimum, then raises (``model.statusText``: no such attribute);
* 2: solves to twice the reference optimum + 7, then raises;
* 3: correct, but uses PuLP's names without importing them (``from pulp import *`` missing);
* 4: raises before building anything.

The real CLI re-grades that run under ``default``, ``default+after-solve`` and
``default+preload=pulp+after-solve``. ``after-solve`` grades 1 and 2 on their last captured solve
(correct, wrong); ``preload=pulp`` lets 3 run (correct); 0 and 4 keep their verdicts everywhere.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.records import ObjectiveReference
from trex_eval.report import load_run
from trex_eval.report.protocol_diff import diff_protocols
from trex_eval.report.runs import arrange
from trex_eval.store import RunStore

pytestmark = pytest.mark.slow  # one run and three re-grades through the CLI: about a minute

BENCHMARK = "nl4opt"
PROTOCOLS = ("default", "default+after-solve", "default+preload=pulp+after-solve")
CANONICAL = ("default", "default+after-solve@1", "default+preload@1=pulp+after-solve@1")
SOLVE = (
    "model = {lib}LpProblem('p', {lib}LpMinimize)\nx = {lib}LpVariable('x', lowBound=0)\n"
    "model += x + {value!r}\nmodel.solve({lib}PULP_CBC_CMD(msg=False))\n"
    "print('objective:', {lib}value(model.objective))\n"
)
PROGRAMS = (
    "import pulp\n" + SOLVE,
    "import pulp\n" + SOLVE + "print(model.statusText)\n",
    "import pulp\n" + SOLVE.replace("{value!r}", "{wrong!r}") + "print(model.statusText)\n",
    SOLVE.replace("{lib}", ""),
    "raise ValueError('the data file is missing')\n" + "import pulp\n" + SOLVE,
)
EXPECTED = {  # problem index -> verdict under each of PROTOCOLS
    0: ("correct", "correct", "correct"),
    1: ("runtime_error", "correct", "correct"),
    2: ("runtime_error", "wrong", "wrong"),
    3: ("runtime_error", "runtime_error", "correct"),
    4: ("runtime_error", "runtime_error", "runtime_error"),
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("protocols")
    problems = load_benchmark(BENCHMARK, data_dir=data_dir).problems[: len(PROGRAMS)]
    lines = []
    for problem, template in zip(problems, PROGRAMS, strict=True):
        reference = problem.reference
        assert isinstance(reference, ObjectiveReference) and reference.value is not None
        code = template.format(lib="pulp.", value=reference.value, wrong=2 * reference.value + 7)
        text = f"The model:\n\n```python\n{code}```\n"
        lines.append(json.dumps({"benchmark": BENCHMARK, "problem_id": problem.id, "completion": text}))
    replay = root / "completions.jsonl"
    replay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "run"
    trex_eval(
        "run", "--model", "replay", "--opt", f"path={replay}", "-b", BENCHMARK,
        "--limit", str(len(PROGRAMS)), "--out", str(out), "--no-progress",
        timeout=240,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def compared(run_dir: Path) -> tuple[str, Path]:
    """The CLI's stdout (200 columns) and the folder of the files it wrote."""
    files = run_dir.parent / "files"
    args = [arg for protocol in PROTOCOLS for arg in ("--protocol", protocol)]
    done = trex_eval(
        "compare", str(run_dir), *args, "--regrade-dir", str(run_dir.parent / "regraded"),
        "--out", str(files / "protocols.md"), "--out", str(files / "differing.csv"), "--no-progress",
        columns=200, timeout=300,
    )  # fmt: skip
    return done.stdout, files


def test_each_protocol_regrades_the_run_into_its_own_directory(
    run_dir: Path, compared: tuple[str, Path]
) -> None:
    for text, canonical in zip(PROTOCOLS, CANONICAL, strict=True):
        run = load_run(run_dir.parent / "regraded" / canonical)
        assert run.manifest.settings.protocol == canonical, text
        ((bench),) = run.benchmarks
        verdicts = [problem.samples[0].grade.verdict.value for problem in bench.problems]  # type: ignore[union-attr]
        assert verdicts == [EXPECTED[i][PROTOCOLS.index(text)] for i in range(len(PROGRAMS))]


def test_the_differing_samples_with_each_sides_grade(compared: tuple[str, Path], data_dir: Path) -> None:
    _, files = compared
    with (files / "differing.csv").open(encoding="utf-8", newline="") as source:
        rows = list(csv.DictReader(source))
    ids = [problem.id for problem in load_benchmark(BENCHMARK, data_dir=data_dir).problems[: len(PROGRAMS)]]
    expected = [
        (CANONICAL[0], CANONICAL[k], ids[i], EXPECTED[i][0], EXPECTED[i][k])
        for k in (1, 2)
        for i in range(len(PROGRAMS))
        if EXPECTED[i][0] != EXPECTED[i][k]
    ]
    seen = [
        (
            r["baseline_protocol"],
            r["candidate_protocol"],
            r["problem_id"],
            r["baseline_verdict"],
            r["candidate_verdict"],
        )
        for r in rows
    ]
    assert seen == expected
    for row in rows:
        assert row["baseline_rule"] == row["candidate_rule"] == "strict@3"
        assert row["baseline_reason"] and row["candidate_reason"]
        if row["candidate_verdict"] == "correct" and row["baseline_verdict"] == "runtime_error":
            # after-solve names itself in every grade it decided; preload leaves the rule's reason
            assert row["candidate_reason"].startswith("after-solve@1") or row["problem_id"] == ids[3]
    assert "statusText" in rows[0]["baseline_reason"]


def test_the_terminal_and_markdown_tables(compared: tuple[str, Path]) -> None:
    stdout, files = compared
    for canonical in CANONICAL[1:]:
        assert f"candidate: {canonical}" in stdout
        assert f"default  →  {canonical}" in stdout
    assert "baseline:  default" in stdout
    markdown = (files / "protocols.md").read_text(encoding="utf-8")
    # counts per benchmark: samples, differ, baseline pass, candidate pass, gained, lost
    assert "| nl4opt | 5 | 2 | 1 | 2 | +1 | -0 | strict@3 |" in markdown
    assert "| nl4opt | 5 | 3 | 1 | 3 | +2 | -0 | strict@3 |" in markdown
    assert f"## `default` → `{CANONICAL[2]}`" in markdown
    assert "paired statistics: trex-eval compare" in stdout


def test_refuses_runs_of_other_completions(run_dir: Path) -> None:
    store = RunStore(run_dir)
    samples = list(store.iter_samples())
    changed = samples[0].model_copy(
        update={"completion": samples[0].completion.model_copy(update={"text": "something else"})}
    )
    other = arrange(store.read_manifest(), [changed, *samples[1:]], path=run_dir.parent / "other")
    with pytest.raises(ConfigError, match=r"not gradings of the same completions.*another completion"):
        diff_protocols(load_run(run_dir), other)


def test_refuses_what_it_cannot_compare(run_dir: Path, tmp_path: Path) -> None:
    run = str(run_dir)
    one = trex_eval("compare", run, "--protocol", "default", cwd=tmp_path, expect=2)
    assert "a comparison needs two" in one.stderr
    two = trex_eval(
        "compare", run, run, "--protocol", "default", "--protocol", "orlm", cwd=tmp_path, expect=2
    )
    assert "give exactly one run directory" in two.stderr
    typo = trex_eval(
        "compare", run, "--protocol", "default", "--protocol", "default+aftersolve", cwd=tmp_path, expect=2
    )
    assert "did you mean 'after-solve'" in typo.stderr
    suffix = trex_eval(
        "compare",
        run,
        "--protocol",
        "default",
        "--protocol",
        "orlm",
        "--out",
        "x.html",
        cwd=tmp_path,
        expect=2,
    )
    assert "compare writes .md or .csv" in suffix.stderr
    mixed = trex_eval(
        "compare", run, "--protocol", "default", "--protocol", "orlm", "--common", cwd=tmp_path, expect=2
    )
    assert "--protocol compares one run under several protocols" in mixed.stderr
    stray = trex_eval("compare", run, "--regrade-dir", str(tmp_path / "rg"), cwd=tmp_path, expect=2)
    assert "--regrade-dir is where --protocol writes" in stray.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything was graded or written
