"""scripts/conventions_table.py: a recorded run re-graded under each convention by the real
``trex-eval grade``, and the table of what each convention moved (issue 45)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from trex_eval.backends.base import BackendSpec
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "conventions_table.py"

# NL4OPT 0 (maximise fish, label 3000) written without its import: a NameError as written, correct
# with the PuLP namespace pre-loaded.
IMPLICIT_IMPORT = """```python
prob = LpProblem("fish", LpMaximize)
dogs = LpVariable("dogs", lowBound=0)
trucks = LpVariable("trucks", lowBound=0)
prob += 100 * dogs + 300 * trucks
prob += 50 * dogs + 100 * trucks <= 1000
prob += dogs <= trucks
prob.solve(PULP_CBC_CMD(msg=False))
print(value(prob.objective))
```"""

# NL4OPT 1 (maximise profit, label 5050) solved right, then a print line that raises: a runtime
# error as written, correct when the last captured solve is graded.
CRASH_AFTER_SOLVE = """```python
import pulp
prob = pulp.LpProblem("printers", pulp.LpMaximize)
colour = pulp.LpVariable("colour", lowBound=0, upBound=20)
mono = pulp.LpVariable("mono", lowBound=0, upBound=30)
prob += 200 * colour + 70 * mono
prob += colour + mono <= 35
prob.solve(pulp.PULP_CBC_CMD(msg=False))
print("status", pulp.LpProblem.status[prob.status])
print(pulp.value(prob.objective))
```"""


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conventions_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _recorded_run(tmp_path: Path, data_dir: Path) -> Path:
    path = tmp_path / "recorded.jsonl"
    records = [
        {"problem_id": "0", "completion": IMPLICIT_IMPORT},
        {"problem_id": "1", "completion": CRASH_AFTER_SOLVE},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    model = BackendSpec(name="recorded", backend="replay", options={"path": str(path)})
    spec = RunSpec(model=model, benchmarks=("nl4opt",), limit=2, prompt_set="pulp")
    return pipeline.run(
        spec, RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False)
    ).run_dir


def test_default_protocols_are_each_convention_on_the_runs_own_base(script: ModuleType) -> None:
    texts = script.protocols_for("orlm")
    assert texts[0] == "orlm" and "orlm+after-solve" in texts and "orlm+preload=pulp" in texts
    assert texts.count("orlm+after-solve") == 1  # a peer protocol already listed is not repeated
    assert "trex-compat" in texts and "default" not in texts


@pytest.mark.slow
def test_each_convention_moves_the_sample_it_names(
    script: ModuleType, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _recorded_run(tmp_path, data_dir)
    protocols = ["default", "default+preload=pulp", "default+after-solve", "default+preload=pulp+after-solve"]
    out = tmp_path / "table"
    graded = script.table([run], protocols=protocols, base="", out=out, workers=2)
    # A second call reads the finished re-grades instead of grading again, and prints the table.
    assert script.main([str(run), "--out", str(out), *(f"--protocol={p}" for p in protocols)]) == 0
    printed = capsys.readouterr().out
    assert printed == script.markdown(graded)

    rows = {row.graded.protocol: row for row in graded}
    assert rows["default"].pass_at_1 == 0.0 and not rows["default"].gained
    preload = rows["default+preload@1=pulp"]
    assert [k[1] for k in preload.gained] == ["0"] and not preload.lost and preload.pass_at_1 == 0.5
    after = rows["default+after-solve@1"]
    assert [k[1] for k in after.gained] == ["1"] and not after.lost and after.pass_at_1 == 0.5
    both = rows["default+preload@1=pulp+after-solve@1"]
    assert [k[1] for k in both.gained] == ["0", "1"] and both.pass_at_1 == 1.0
    # Every row names the benchmark's version, the rule's version and the canonical protocol text,
    # and the commands that re-derive it are printed.
    assert (
        "| recorded | nl4opt@1 | 2 | `default+preload@1=pulp` | `strict@3` | 50.0 % | 1 | 0 | 1 |" in printed
    )
    assert f"trex-eval grade {run} --protocol default+after-solve --out {out}/run/02" in printed
    assert (
        "- recorded, nl4opt, `default+preload@1=pulp+after-solve@1`: +[0, 1] −[]; "
        "runtime_error -> correct ×2" in printed
    )
