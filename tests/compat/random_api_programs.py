"""Hypothesis strategies for random gurobipy programs that reach one model through random API
paths, for the differential test against real gurobipy.

A program declares its variables one of several ways (``addVar`` loops, ``addVars`` over ranges,
key lists or tuple keys with bounds given as scalars, lists, ranges, dicts with stray keys, NumPy
arrays or pandas Series, ``addMVar``), adds constraints through ``addConstr``/``quicksum``,
``addConstrs`` generators, ``tupledict.sum`` with full and short patterns, ``tupledict.prod`` with
dicts and lists, ``addLConstr``, ``addRange``, matrix products, indicator and ``max_``/``min_``/
``abs_``/``and_``/``or_`` constraints, sometimes removes objects, and sets one objective or
several (``setObjectiveN``, blended and hierarchical) before ``optimize``. Every variable has
finite bounds, so each program has an optimum unless its constraints contradict each other.
Nothing here knows an expected result: the test runs each program under real gurobipy and
under the layer and compares.
"""

from __future__ import annotations

from hypothesis import strategies as st

#: What every program starts with; ``gp`` and ``GRB`` are given to it (real gurobipy or the layer).
HEADER = "import numpy as np\nimport pandas as pd\nm = gp.Model('random')\nm.Params.OutputFlag = 0\nV = []\n"

_coef = st.integers(-9, 9).filter(bool)
_small = st.integers(1, 9)


@st.composite
def _variables(draw: st.DrawFn, block: int) -> list[str]:
    """Lines declaring one block of variables; each appends its Vars to ``V`` and defines ``x{block}``
    as a tupledict (or an MVar, for the matrix path) with 2-part keys ``(i, j)`` where it can."""
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    count = rows * cols
    vtype = draw(st.sampled_from(["GRB.CONTINUOUS", "GRB.INTEGER", "GRB.BINARY", "'C'", "'I'"]))
    uppers = draw(st.lists(_small, min_size=count, max_size=count))
    name = f"x{block}"
    path = draw(st.sampled_from(["loop", "product", "keys", "mvar"]))
    if path == "loop":
        return [
            f"{name} = gp.tupledict()",
            f"for i in range({rows}):",
            f"    for j in range({cols}):",
            f"        {name}[i, j] = m.addVar(ub={uppers}[i * {cols} + j], vtype={vtype},"
            f" name=f'{name}_{{i}}_{{j}}')",
            f"V.extend({name}.values())",
        ]
    if path == "mvar":
        shape = draw(st.sampled_from([f"({rows}, {cols})", f"{count}"]))
        ub = draw(st.sampled_from([repr(max(uppers)), f"np.array({uppers})" if shape == f"{count}" else "5"]))
        return [
            f"M{block} = m.addMVar({shape}, ub={ub}, vtype={vtype}, name='{name}')",
            f"{name} = gp.tupledict(((k // {cols}, k % {cols}), v)"
            f" for k, v in enumerate(M{block}.reshape({count}).tolist()))",
            f"V.extend({name}.values())",
        ]
    keys = f"[(i, j) for i in range({rows}) for j in range({cols})]"
    index = f"range({rows}), range({cols})" if path == "product" else keys
    ub_form = draw(st.sampled_from(["list", "range", "dict", "numpy", "series", "scalar", "generator"]))
    ub = {
        "list": repr(uppers),
        "range": f"range(1, {count + 1})",
        "dict": f"{{**dict(zip({keys}, {uppers})), ('stray', 0): 1, 99: 4}}",
        "numpy": f"np.array({uppers}, dtype=float)",
        "series": f"pd.Series({uppers}, index=[f'k{{t}}' for t in range({count})])",
        "scalar": repr(max(uppers)),
        "generator": f"(u for u in {uppers})",
    }[ub_form]
    lb = draw(st.sampled_from(["0", "{(0, 0): 1}", "np.zeros(" + str(count) + ")"]))
    obj = draw(st.sampled_from(["0.0", f"{{(0, 0): {draw(_coef)}}}", "[1] * " + str(count)]))
    return [
        f"{name} = m.addVars({index}, lb={lb}, ub={ub}, obj={obj}, vtype={vtype}, name='{name}')",
        f"V.extend({name}.values())",
    ]


def _term_sum(draw: st.DrawFn, blocks: int) -> str:
    block = draw(st.integers(0, blocks - 1))
    form = draw(
        st.sampled_from(["sum_all", "sum_full", "sum_short", "select", "prod_dict", "prod_list", "quicksum"])
    )
    x = f"x{block}"
    if form == "sum_all":
        return f"{x}.sum()"
    if form == "sum_full":
        return f"{x}.sum({draw(st.integers(0, 2))}, '*')"
    if form == "sum_short":
        return f"{x}.sum({draw(st.integers(0, 2))})"
    if form == "select":
        return f"gp.quicksum({x}.select('*', {draw(st.integers(0, 2))}))"
    if form == "prod_dict":
        return f"{x}.prod({{k: {draw(_coef)} * (1 + k[0] - k[1]) for k in {x}}})"
    if form == "prod_list":
        return f"gp.tupledict(enumerate({x}.values())).prod({draw(st.lists(_coef, min_size=1, max_size=9))})"
    return f"gp.quicksum({draw(_coef)} * v for v in {x}.values())"


@st.composite
def _constraint(draw: st.DrawFn, blocks: int, number: int) -> list[str]:
    kind = draw(
        st.sampled_from(["constr", "constr", "constrs", "lconstr", "range", "matrix", "general", "general"])
    )
    lhs = f"{draw(_coef)} * {_term_sum(draw, blocks)} + {draw(_coef)} * {_term_sum(draw, blocks)}"
    rhs = draw(st.integers(-5, 30))
    sense = draw(st.sampled_from(["<=", ">=", "=="]))
    if kind == "constr":
        return [f"c{number} = m.addConstr({lhs} {sense} {rhs}, name='c{number}')"]
    if kind == "constrs":
        block = draw(st.integers(0, blocks - 1))
        return [
            f"c{number} = m.addConstrs(({draw(_coef)} * x{block}.sum(i, '*') <= {abs(rhs) + 2}"
            f" for i in range(3)), name='c{number}')"
        ]
    if kind == "lconstr":
        code = {"<=": "GRB.LESS_EQUAL", ">=": "GRB.GREATER_EQUAL", "==": "GRB.EQUAL"}[sense]
        return [f"c{number} = m.addLConstr({lhs}, {code}, {rhs}, 'c{number}')"]
    if kind == "range":
        return [f"c{number} = m.addRange({lhs}, {rhs - 10}, {rhs + 5}, 'c{number}')"]
    if kind == "matrix":
        coeffs = draw(st.lists(st.integers(-3, 3), min_size=4, max_size=4))
        return [
            f"c{number} = m.addConstr(np.array([{coeffs}])[:, :len(V[:4])]"
            f" @ gp.MVar.fromlist(V[:4]) <= {abs(rhs)})",
        ]
    general = draw(st.sampled_from(["indicator", "max", "min", "abs", "and", "or"]))
    if general == "indicator":
        value = draw(st.integers(0, 1))
        return [
            f"b{number} = m.addVar(vtype=GRB.BINARY, name='b{number}')",
            f"c{number} = m.addConstr((b{number} == {value}) >> ({lhs} {sense} {rhs}))",
            f"m.addConstr(b{number} >= {draw(st.integers(0, 1))} * 0.5)",
        ]
    if general in ("max", "min", "abs"):
        operands = "V[0]" if general == "abs" else f"V[:{draw(st.integers(1, 3))}]"
        call = {
            "max": f"gp.max_({operands}, constant={draw(st.integers(-2, 4))})",
            "min": f"gp.min_({operands})",
            "abs": f"gp.abs_({operands})",
        }[general]
        shift = draw(st.integers(-3, 0))
        return [
            f"s{number} = m.addVar(lb={shift}, ub=10, name='s{number}')",
            f"t{number} = m.addVar(lb={shift}, ub=10, name='t{number}')",
            f"m.addConstr(t{number} == V[0] + {shift})",
            f"c{number} = m.addConstr(s{number} == {call.replace('V[0]', f't{number}')})",
            f"m.addConstr({draw(_coef)} * s{number} <= {abs(rhs) + 3})",
        ]
    return [
        f"bits{number} = m.addVars(3, vtype=GRB.BINARY, name='bits{number}')",
        f"r{number} = m.addVar(vtype=GRB.BINARY, name='r{number}')",
        f"c{number} = m.addConstr(r{number} == gp.{general}_(bits{number}.values()))",
        f"m.addConstr(bits{number}.sum() + {draw(_coef)} * r{number} <= {abs(rhs) % 4 + 1})",
    ]


@st.composite
def _objective(draw: st.DrawFn, blocks: int) -> list[str]:
    sense = draw(st.sampled_from(["GRB.MINIMIZE", "GRB.MAXIMIZE"]))
    first = f"{draw(_coef)} * {_term_sum(draw, blocks)} + gp.quicksum({draw(_coef)} * v for v in V[::2])"
    if draw(st.booleans()):
        return [f"m.setObjective({first} + {draw(st.integers(-5, 5))}, {sense})"]
    second = f"{draw(_coef)} * {_term_sum(draw, blocks)}"
    priorities = draw(st.sampled_from([(1, 1), (2, 1), (1, 3)]))
    return [
        f"m.ModelSense = {sense}",
        f"m.setObjectiveN({first}, 0, priority={priorities[0]}, weight={draw(st.sampled_from([1, 2, -1]))})",
        f"m.setObjectiveN({second}, 1, priority={priorities[1]})",
    ]


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Source of one random program (see the module docstring)."""
    blocks = draw(st.integers(1, 3))
    lines: list[str] = []
    for block in range(blocks):
        lines += draw(_variables(block))
    count = draw(st.integers(1, 5))
    for number in range(count):
        lines += draw(_constraint(blocks, number))
    if draw(st.integers(0, 4)) == 0:
        lines += ["m.update()", f"m.remove([c{count - 1}])"]
    lines += draw(_objective(blocks))
    lines.append("m.optimize()")
    return "\n".join(lines) + "\n"
