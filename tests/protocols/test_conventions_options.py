"""The field's execution conventions as named, versioned protocol options (issue 45, item 2).

The expected verdicts come from a peer's runner, replayed here on a recorded set of PuLP programs:
ORLM's ``eval/execute.py`` at Cardinal-Operations/ORLM@38712c9 (the "ORLM-style loop"), with the
deviations issue 45 records for the third peer -- its PuLP programs run with ``from pulp import *``
pre-loaded, an exception swallowed and the model the program built read afterwards, ``rel 5 %``
(no rounding), ``|pred| <= 0.05`` for a zero label and a ``No Best Solution`` label matched by a
model never solved. Each program is executed by that runner as published (a ``python`` subprocess,
stdout parsed), and trex-eval's composed protocol, in real runs in the real sandbox, must give the
same verdict per item -- except the two items where that runner pays for nothing, asserted as
such. Without the options ("as written"), the same programs are graded as the default protocol
grades them, and the one that solved correctly and then crashed is diagnosed
``crashed_after_solve``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.protocols import get_protocol, protocol_spec
from trex_eval.protocols.conventions.protocol import ComposedProtocol, with_preload
from trex_eval.records import DiagnosisCategory, ObjectiveReference, SampleRecord, Verdict
from trex_eval.report.diagnoses import crash_lines, crash_note
from trex_eval.report.markdown import render_summary_markdown
from trex_eval.reward.catalogue import ScorerSettings
from trex_eval.run import pipeline
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import RunStore

PEER = "default+preload=pulp+after-solve+zero-band=0.05+no-best-solution+rule=rel:0.05"
CANONICAL = "default+rule@1=rel@3:rtol=0.05+preload@1=pulp+after-solve@1+zero-band@1=0.05+no-best-solution@1"

# ----------------------------------------------------------------------------- the peer's runner

ORLM_SOURCE = "Cardinal-Operations/ORLM@38712c9ff688c362a5ddfc78d958df0b04f0a923 eval/execute.py"
PEER_WRAPPER = """\
from pulp import *
_peer_namespace = {"__name__": "__peer__"}
_peer_namespace.update({k: v for k, v in globals().items() if not k.startswith("_")})
try:
    exec(compile(_PEER_PROGRAM, "<program>", "exec"), _peer_namespace)
except Exception:
    pass
_peer_models = [v for v in _peer_namespace.values() if isinstance(v, LpProblem)]
if _peer_models:
    model = _peer_models[-1]
    if model.status == LpStatusOptimal:
        print(f"Just print the best solution: {value(model.objective)}")
    else:
        print("No Best Solution")
"""
"""The peer's script around a program: the pre-loaded namespace, the exception swallowed, the
last module-level ``LpProblem`` read, and ORLM's ``ADD_SCRIPT`` lines (execute.py line 10) for a
PuLP model (``status == 1``: Optimal)."""


def peer_extract(output: str) -> str | None:
    """ORLM ``main`` (execute.py lines 96-116): the first ```python block, sliced as upstream."""
    start = output.find("```python")
    if start == -1:
        return None
    end = output.find("```", start + 9)
    script = output[start:end].replace("```python", "")
    return None if script.strip() == "" else script


def peer_answer(script: str, workdir: Path) -> str | None:
    """ORLM ``compile_script`` (execute.py lines 23-70): run the script with ``python``, the first
    ``Just print the best solution:`` line of stdout, else ``No Best Solution`` when printed, else
    nothing; a non-zero exit or a time-out is ``Execution Failed`` (no answer)."""
    path = workdir / "peer_script.py"
    path.write_text(f"_PEER_PROGRAM = {script!r}\n{PEER_WRAPPER}")
    try:
        process = subprocess.run(
            [sys.executable, str(path)], text=True, capture_output=True, timeout=120, check=True, cwd=workdir
        )
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return None
    result = process.stdout
    position = result.find("Just print the best solution:")
    if position != -1:
        best = result[position:].replace("Just print the best solution:", "").strip()
        return best.split("\n", 1)[0]
    return "No Best Solution" if "No Best Solution" in result else None


def peer_match(pred: str | None, label: str, tolerance: float = 0.05) -> bool:
    """ORLM ``is_anyone_match`` (execute.py lines 184-200) for one answer, at ``rel 5 %`` without
    ORLM's ``round`` (the peer's comparison): ``No Best Solution`` only by itself, ``|pred| <=
    tolerance`` for a zero label, else ``|pred - gt| / |gt| <= tolerance``."""
    if label == "No Best Solution":
        return pred is not None and pred == label
    gt = float(label)
    if pred is None or pred == "No Best Solution":
        return False
    value = float(pred)
    if gt == 0:
        return abs(value) <= tolerance
    return abs((value - gt) / gt) <= tolerance


# ----------------------------------------------------------------------------- the recorded set


def pulp_program(
    target: float | None,
    *,
    implicit: bool = False,
    solve: bool = True,
    tail: str = "",
    before_solve: str = "",
) -> str:
    """A PuLP program maximising ``x + y`` with ``x, y <= target / 2`` (infeasible rows for
    ``None``), with or without ``import pulp`` (``implicit``: the names used bare, as the peer's
    pre-loaded namespace lets a program write them)."""
    p = "" if implicit else "pulp."
    rows = (
        [f"prob += x <= {target / 2!r}", f"prob += y <= {target / 2!r}"]
        if target is not None
        else ["prob += x + y >= 5", "prob += x + y <= 1"]
    )
    lines = [
        *([] if implicit else ["import pulp"]),
        f'prob = {p}LpProblem("recorded", {p}LpMaximize)',
        f'x = {p}LpVariable("x", lowBound=0)',
        f'y = {p}LpVariable("y", lowBound=0)',
        "prob += x + y",
        *rows,
        before_solve,
        *([f"prob.solve({p}PULP_CBC_CMD(msg=0))"] if solve else []),
        f"print('objective', {p}value(prob.objective))" if solve else "",
        tail,
    ]
    return "\n".join(line for line in lines if line) + "\n"


def fenced(code: str) -> str:
    return f"The model, in PuLP.\n\n```python\n{code}```\n"


CRASH = "print('status', LpProblem.status[prob.status])"
"""The crash after a correct solve the issue names: ``LpProblem.status`` is an instance attribute."""
CRASH_EXPLICIT = CRASH.replace("LpProblem", "pulp.LpProblem")


def recorded_set(nl4opt_245: dict[str, float | None]) -> dict[tuple[str, str], tuple[str, str]]:
    """(benchmark, problem id) -> (completion, what the item is)."""
    v = nl4opt_245
    items: dict[tuple[str, str], tuple[str, str]] = {}

    def add(bench: str, pid: str, code: str, what: str) -> None:
        items[(bench, pid)] = (fenced(code), what)

    add("nl4opt-245", "0", pulp_program(v["0"]), "explicit import, correct")
    add("nl4opt-245", "1", pulp_program(v["1"], implicit=True), "implicit import, correct")
    add("nl4opt-245", "2", pulp_program(2 * (v["2"] or 0), implicit=True), "implicit import, wrong")
    add("nl4opt-245", "3", pulp_program(v["3"], tail=CRASH_EXPLICIT), "correct, then crash")
    add(
        "nl4opt-245",
        "4",
        pulp_program(v["4"], implicit=True, tail=CRASH),
        "implicit import, correct, then crash",
    )
    add(
        "nl4opt-245",
        "5",
        pulp_program(1.5 * (v["5"] or 0), tail="raise RuntimeError('report failed')"),
        "wrong, then crash",
    )
    add("nl4opt-245", "6", pulp_program(1.03 * (v["6"] or 0)), "3 % off")
    add("nl4opt-245", "7", pulp_program(1.10 * (v["7"] or 0), implicit=True), "10 % off")
    add("nl4opt-245", "16", pulp_program(0.0, solve=False), "No Best Solution label, model never solved")
    add("nl4opt-245", "27", pulp_program(None), "No Best Solution label, infeasible model")
    add("nl4opt-245", "32", pulp_program(40.0), "No Best Solution label, an optimum found")
    add(
        "nl4opt-245",
        "36",
        pulp_program(10.0, before_solve="raise ValueError('data missing')"),
        "model built, crash before its solve",
    )
    add("nl4opt-245", "48", "print('No Best Solution')\n", "prints the label, builds nothing")
    add("nl4opt", "66", pulp_program(0.03), "zero label, optimum 0.03")
    add("nl4opt", "69", pulp_program(0.2, implicit=True), "zero label, optimum 0.2")
    add("nl4opt", "76", pulp_program(0.0, tail=CRASH_EXPLICIT), "zero label, optimum 0, then crash")
    return items


PEER_ARTEFACTS = {
    (
        "nl4opt-245",
        "36",
    ): "the runner swallows an exception raised before any solve and reads the unsolved model",
    ("nl4opt-245", "48"): "the runner believes the program's own printed 'No Best Solution'",
}
"""Items the peer's runner passes for nothing: trex-eval grades them on the harness's capture."""


def _run(
    tmp_path: Path, data_dir: Path, items: dict[tuple[str, str], tuple[str, str]], protocol: str, *, name: str
) -> dict[tuple[str, str], SampleRecord]:
    """Replay ``items`` in real runs (one per benchmark) under ``protocol``; the records by item."""
    records: dict[tuple[str, str], SampleRecord] = {}
    for bench in sorted({bench for bench, _ in items}):
        lines = [
            json.dumps({"problem_id": pid, "completion": c})
            for (b, pid), (c, _) in items.items()
            if b == bench
        ]
        path = tmp_path / f"{bench}-{name}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        model = BackendSpec(name="recorded", backend="replay", options={"path": str(path)})
        ids = tuple(pid for b, pid in items if b == bench)
        spec = RunSpec(model=model, benchmarks=(bench,), protocol=protocol, problem_ids={bench: ids})
        out = tmp_path / f"run-{bench}-{name}"
        result = pipeline.run(spec, RunOptions(data_dir=data_dir, out=out, show_progress=False))
        store = RunStore(result.run_dir)
        manifest = store.read_manifest()
        assert manifest.settings.protocol == protocol
        assert result.summary.run.protocol == protocol
        if protocol != "default":
            assert protocol in render_summary_markdown(result.summary)  # the table header names it
        records.update({(bench, r.problem_id): r for r in store.iter_samples()})
    return records


def test_composed_protocol_reproduces_the_peers_runner_item_by_item(tmp_path: Path, data_dir: Path) -> None:
    bench = load_benchmark("nl4opt-245", data_dir=data_dir)
    values = {p.id: p.reference.value for p in bench.problems if isinstance(p.reference, ObjectiveReference)}
    labels = {
        ("nl4opt-245", p.id): p.reference.label
        for p in bench.problems
        if isinstance(p.reference, ObjectiveReference)
    }
    zero = load_benchmark("nl4opt", data_dir=data_dir)
    labels.update(
        {
            ("nl4opt", p.id): p.reference.label
            for p in zero.problems
            if isinstance(p.reference, ObjectiveReference)
        }
    )
    items = recorded_set(values)

    peer_dir = tmp_path / "peer"
    peer_dir.mkdir()
    peer: dict[tuple[str, str], bool] = {}
    for key, (completion, _) in items.items():
        script = peer_extract(completion)
        assert script is not None
        peer[key] = peer_match(peer_answer(script, peer_dir), labels[key].strip())

    canonical = protocol_spec(PEER)
    assert canonical == CANONICAL
    composed = _run(tmp_path, data_dir, items, canonical, name="composed")
    as_written = _run(tmp_path, data_dir, items, "default", name="as-written")

    disagreements = {
        key: (items[key][1], peer[key], composed[key].grade.verdict.value, composed[key].grade.reason)
        for key in items
        if peer[key] != (composed[key].grade.verdict is Verdict.CORRECT)
    }
    assert set(disagreements) == set(PEER_ARTEFACTS), disagreements
    for key in PEER_ARTEFACTS:  # the peer passes them; trex-eval does not
        assert peer[key] and composed[key].grade.verdict is not Verdict.CORRECT
    # The peer's runner is not a rubber stamp: it fails the wrong items too.
    assert sum(peer.values()) == 11 and len(peer) == 16

    passed_as_written = {key for key, record in as_written.items() if record.grade.passed}
    assert passed_as_written == {("nl4opt-245", "0"), ("nl4opt-245", "27")}
    # Each convention is named in the reason of the grade it decided.
    assert "after-solve@1" in composed[("nl4opt-245", "3")].grade.reason
    assert "no-best-solution@1" in composed[("nl4opt-245", "16")].grade.reason
    assert "zero-band@1" in composed[("nl4opt", "66")].grade.reason
    assert composed[("nl4opt-245", "1")].grade.passed  # the implicit import, pre-loaded
    assert as_written[("nl4opt-245", "1")].execution.error_type == "NameError"

    # As written, the program that solved correctly and then crashed is named so; the one that
    # crashed after a wrong solve is not, nor the one that never got to its solve.
    crashed = {
        k
        for k, r in as_written.items()
        if r.grade.diagnosis is not None
        and r.grade.diagnosis.category is DiagnosisCategory.CRASHED_AFTER_SOLVE
    }
    assert crashed == {("nl4opt-245", "3"), ("nl4opt", "76")}
    detail = as_written[("nl4opt-245", "3")].grade.diagnosis
    assert detail is not None and "AttributeError" in detail.detail
    note = crash_note([{DiagnosisCategory.CRASHED_AFTER_SOLVE.value: len(crashed)}])
    assert note is not None and note.startswith("2 more samples would pass without the crash")


def test_the_protocol_text_is_validated_with_close_matches_and_versions() -> None:
    assert protocol_spec("orlm") == "orlm"
    assert protocol_spec(" orlm + After-Solve ") == "orlm+after-solve@1"
    assert (
        protocol_spec("default+no-best-solution+preload=PuLP") == "default+preload@1=pulp+no-best-solution@1"
    )
    cases = {
        "orml+after-solve": "did you mean 'orlm'",
        "default+aftersolve": "did you mean 'after-solve'",
        "default+after-solve@2": "implemented at version 1; version 2 was asked for",
        "default+preload=pulpp": "did you mean 'pulp'",
        "default+zero-band=-0.1": "not a positive finite number",
        "default+zero-band": "needs a value",
        "default+after-solve=yes": "takes no value",
        "default+after-solve+after-solve": "given twice",
        "after-solve": "does not start with a base protocol",
        "default++after-solve": "empty option",
        "default+rule=orgeval-exact": "structure rule",
    }
    for text, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            protocol_spec(text)
    protocol = get_protocol("orlm+preload=pulp")
    assert isinstance(protocol, ComposedProtocol) and protocol.name == "orlm+preload@1=pulp"
    assert get_protocol("orlm") is get_protocol("orlm")  # a bare name is the registered protocol


def test_the_preload_goes_after_future_imports_and_the_docstring() -> None:
    code = '"""Doc."""\nfrom __future__ import annotations\nx = 1\n'
    assert with_preload(code, "from pulp import *") == (
        '"""Doc."""\nfrom __future__ import annotations\nfrom pulp import *\nx = 1\n'
    )
    assert with_preload("x = 1\n", "from pulp import *") == "from pulp import *\nx = 1\n"
    assert with_preload("def (:\n", "from pulp import *").startswith("from pulp import *\n")


def test_reward_settings_refuse_conventions_unless_allowed() -> None:
    for text in (
        "default+no-best-solution",
        "default+zero-band=0.05",
        "orlm+after-solve",
        "default+preload=pulp",
    ):
        with pytest.raises(ConfigError, match="--allow-conventions") as caught:
            ScorerSettings(protocol=text)
        assert protocol_spec(text) in str(caught.value)
    allowed = ScorerSettings(protocol="default+no-best-solution", allow_conventions=True)
    assert allowed.protocol == "default+no-best-solution@1"
    assert ScorerSettings.from_mapping(allowed.as_mapping()) == allowed
    # A rule option alone pays nothing it should not: it is a rule, as --rule is.
    assert ScorerSettings(protocol="default+rule=rel:0.05").protocol == "default+rule@1=rel@3:rtol=0.05"
    with pytest.raises(ConfigError, match="did you mean 'orlm'"):
        ScorerSettings(protocol="orml")


def test_the_leaderboard_says_how_many_more_would_pass_without_the_crash() -> None:
    assert crash_note([{"api_misuse": 3}]) is None
    assert crash_note([{"crashed_after_solve": 1}, {"crashed_after_solve": 0}]) == (
        "1 more sample would pass without the crash (crashed_after_solve: solved correctly, then "
        "raised; the protocol option after-solve grades them on their solve)."
    )
    assert crash_lines(
        [("run-a", [{"crashed_after_solve": 2}, {"crashed_after_solve": 1}]), ("run-b", [{}])]
    ) == [
        "- run-a: 3 more samples would pass without the crash (crashed_after_solve: solved correctly, "
        "then raised; the protocol option after-solve grades them on their solve)."
    ]


def test_serve_refuses_conventions_at_start_up_naming_the_flag() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trex_eval", "serve", "--protocol", "orlm+no-best-solution", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "orlm+no-best-solution@1" in done.stderr and "--allow-conventions" in done.stderr
    assert "Traceback" not in done.stderr
