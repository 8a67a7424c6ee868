"""The reference harness's code rewrites (reference-harness.md §3.3, §3.4), quirk by quirk."""

from __future__ import annotations

from trex_eval.protocols.trex_compat.rewrite import (
    ensure_imports,
    insert_lb_if_missing,
    orgeval_rewrite,
    solver_rewrite,
)

DATA = "data/bench4opt/lp_data/data_7_problem7.json"
LP = "temp_lp/m_bench4opt_lp/7_model_data_7_problem7.lp"


def rewrite(code: str, *, insert_lb: bool = True) -> str:
    return orgeval_rewrite(code, data_path=DATA, lp_path=LP, insert_lb=insert_lb)


def test_data_json_is_replaced_everywhere_without_boundaries() -> None:
    out = rewrite(
        "# reads data.json\nf = open('data.json')\nbackup = 'old_data.json.bak'\nmodel.write('a.lp')\n"
    )
    assert "data.json" not in out
    assert f"# reads {DATA}" in out
    assert f"open('{DATA}')" in out
    assert f"'old_{DATA}.bak'" in out


def test_write_calls_on_model_and_m_are_redirected() -> None:
    assert f"model.write('{LP}')" in rewrite("model.write('model.lp')\n")
    assert f"m.write('{LP}')" in rewrite("m.write(path)\n")
    # No word boundary: any name ending in "model" or "m" is hit.
    assert f"mymodel.write('{LP}')" in rewrite("mymodel.write(out)\n")
    assert f"dm.write('{LP}')" in rewrite("dm.write(out)\n")


def test_write_with_nested_parentheses_keeps_the_rest_of_the_call() -> None:
    out = rewrite("model.write(os.path.join(folder, 'x.lp'))\n")
    assert f"model.write('{LP}'))" in out


def test_other_write_calls_are_left_and_a_write_is_appended() -> None:
    out = rewrite("mdl = gp.Model()\nx = mdl.addVars(2)\nmdl.write('mine.lp')")
    assert "mdl.write('mine.lp')" in out
    assert out.endswith(f"\nmodel.write('{LP}')")


def test_model_variable_guess_prefers_addvars_then_addvar_without_boundaries() -> None:
    assert rewrite("x = m.addVar()\ny = model.addVar()").endswith(f"\nm.write('{LP}')")
    assert rewrite("y = model.addVar()\nx = m.addVars(3)").endswith(f"\nm.write('{LP}')")
    assert rewrite("x = opt_model.addVars(3)").endswith(f"\nmodel.write('{LP}')")
    assert rewrite("x = custom.addVars(3)").endswith(f"\nm.write('{LP}')")
    assert rewrite("print('no model here')").endswith(f"\nmodel.write('{LP}')")


def test_prefix_and_imports() -> None:
    out = rewrite("x = 1\nmodel.write('a.lp')\n")
    assert out.startswith("import json\nimport gurobipy as gp\nfrom gurobipy import GRB\nx = 1\n")
    kept = rewrite("import gurobipy as gp\nfrom json import load\nmodel.write('a.lp')\n")
    assert kept.startswith("from gurobipy import GRB\nimport gurobipy as gp\nfrom json import load\n")


def test_ensure_imports_uses_substring_tests() -> None:
    assert (
        ensure_imports("# import json, import gurobipy later\n") == "# import json, import gurobipy later\n"
    )
    assert ensure_imports("from gurobipy import *\n").startswith("import json\nimport gurobipy as gp\n")


def test_addvars_calls_become_free() -> None:
    assert insert_lb_if_missing('x = model.addVars(3, name="x")\n') == (
        'x = model.addVars(3, name="x", lb=-GRB.INFINITY)\n'
    )
    assert (
        insert_lb_if_missing("x = opt_model.addVars(n)\n") == "x = opt_model.addVars(n, lb=-GRB.INFINITY)\n"
    )
    multi_line = 'x = model.addVars(\n    3,\n    name="x",\n)\n'
    assert (
        insert_lb_if_missing(multi_line) == 'x = model.addVars(\n    3,\n    name="x",\n lb=-GRB.INFINITY)\n'
    )
    assert insert_lb_if_missing("x = model.addVars()\n") == "x = model.addVars(, lb=-GRB.INFINITY)\n"


def test_addvars_calls_the_lb_rewrite_leaves_alone() -> None:
    untouched = [
        "x = model.addVars(3, lb=0)\n",
        "x = m.addVars(3)\n",
        "x = model.addVar(name='x')\n",
        "x = model.addVars(3)  # three flows\n",
        'x = model.addVars(range(3), name="x")\n',
        "x = model.addVars(3)",
    ]
    for code in untouched:
        assert insert_lb_if_missing(code) == code


def test_lb_with_spaces_is_not_recognised() -> None:
    assert (
        insert_lb_if_missing("x = model.addVars(3, lb = 0)\n")
        == "x = model.addVars(3, lb = 0, lb=-GRB.INFINITY)\n"
    )


def test_trailing_comment_model_renaming_and_explicit_lb_escape_the_rewrite() -> None:
    base = 'flow = model.addVars(4, name="flow")\nmodel.write("model.lp")\n'
    assert "lb=-GRB.INFINITY" in rewrite(base)
    assert "lb=-GRB.INFINITY" not in rewrite(base.replace('name="flow")', 'name="flow")  # flows'))
    assert "lb=-GRB.INFINITY" not in rewrite(base.replace("model.", "m."))
    assert "lb=-GRB.INFINITY" not in rewrite(base.replace('name="flow")', 'name="flow", lb=0)'))


def test_disabling_only_the_lb_rewrite() -> None:
    code = 'flow = model.addVars(4, name="flow")\nmodel.write("model.lp")\n'
    with_lb, without_lb = rewrite(code), rewrite(code, insert_lb=False)
    assert "lb=-GRB.INFINITY" in with_lb and "lb=-GRB.INFINITY" not in without_lb
    assert with_lb.replace(", lb=-GRB.INFINITY", "") == without_lb


def test_optimize_calls_are_kept() -> None:
    assert "model.optimize()" in rewrite("model.optimize()\nmodel.write('a.lp')\n")


def test_solver_rewrite() -> None:
    code = "import json\nwith open('data.json') as f:\n    data = json.load(f)\n"
    out = solver_rewrite(code, data_json_path="/tmp/run/data.json")
    assert out == "import gurobipy as gp\n" + code.replace("data.json", "/tmp/run/data.json")
    assert solver_rewrite(code, data_json_path=None) == "import gurobipy as gp\n" + code
    assert solver_rewrite("import gurobipy as gp\nx = 1\n", data_json_path="") == (
        "import json\nimport gurobipy as gp\nx = 1\n"
    )
