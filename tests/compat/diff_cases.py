"""Hand-written gurobipy programs, one per behaviour the layer claims, for differential tests.

Each program runs under real gurobipy and under gurobipy_highs (``test_compat_semantics.py``); the
test compares how it ended (exception type), the status and objective of its module-level
``m``, and what it printed. Programs print only what does not depend on the solver's path
(rounded values, unique optima), so equal output means equal semantics. Nothing here states an
expected value: real gurobipy 13.0.3 is the oracle.
"""

from __future__ import annotations

HEADER = (
    "import warnings\nwarnings.simplefilter('ignore', DeprecationWarning)\n"
    "import gurobipy as gp\nfrom gurobipy import GRB\ngp.setParam('OutputFlag', 0)\n"
)


CASES: dict[str, str] = {
    # ------------------------------------------------------------------ tupledict / tuplelist
    "tupledict_short_pattern_is_padded": """
m = gp.Model(); x = m.addVars(3, 4, ub=5, name='x'); m.update()
print(x.sum(1), '|', x.select(2))
m.addConstrs(x.sum(i) <= i + 1 for i in range(3))
m.setObjective(x.sum(), GRB.MAXIMIZE); m.optimize()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    x.sum(0); x.select(0); gp.tuplelist([(1, 2)]).select(1)
print([(w.category.__name__, str(w.message)) for w in caught])
""",
    "quicksum_of_a_tupledict_sums_its_values": """
m = gp.Model(); b = m.addVars([(1, 'a'), (2, 'b')], ub=3, name='b'); m.update()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    total = gp.quicksum(b)
print(total, [(w.category.__name__, str(w.message)) for w in caught], gp.quicksum({4: 1, 5: 2}))
m.setObjective(gp.quicksum(b), GRB.MAXIMIZE); m.optimize()
""",
    "tupledict_patterns": """
m = gp.Model(); x = m.addVars([(1, 'a'), (1, 'b'), (2, 'a'), (3, 'c')], ub=2, name='x'); m.update()
print(x.sum('*', 'a'), '|', x.sum([1, 3], '*'), '|', x.sum((1, 2), 'a'), '|', x.sum(9, '*'))
print(x.select(1, ['a', 'b']), x.select({2}, '*'), x.select(), x.select(1, None))
for bad in ('x.sum(1, 2, 3)', 'x.select(1, 2, 3)', "gp.tupledict({(1, 2): 1, 3: 2}).sum()",
            "gp.tupledict({(1, 2): 1, (1, 2, 3): 2}).select(1)", "gp.tuplelist([(1, 2), 3])",
            "gp.tupledict({1: x[1, 'a']}).sum(1, 2)"):
    try:
        print(eval(bad))
    except Exception as error:
        print(type(error).__name__, error)
m.setObjective(x.sum(1, '*') - x.sum('*', 'c'), GRB.MAXIMIZE); m.optimize()
""",
    "tupledict_prod_with_list_and_dict": """
m = gp.Model(); y = m.addVars(4, ub=3, name='y'); x = m.addVars(2, 2, ub=1, name='x'); m.update()
print(y.prod([1, 2]), '|', y.prod([5, 6, 7, 8]), '|', y.prod({0: 2, 9: 3}), '|', x.prod({(0, 0): 2, (1, 1): 3}, 0))
print(x.prod({(0, 0): 2}, '*', 0), '|', x.prod([[1, 2], [3, 4]]), '|', y.prod({0: x[0, 0]}))
for bad in ('y.prod((1, 2))', 'y.prod([1, 2], 1)', 'y.prod(3)'):
    try:
        print(eval(bad))
    except Exception as error:
        print(type(error).__name__, error)
m.addConstr(y.prod([1, 1, 1, 1]) <= 7)
m.setObjective(y.prod([4.5, 3.25, 2, 1]) + x.prod({(1, 0): 5}), GRB.MAXIMIZE); m.optimize()
""",
    "tupledict_numbers_and_multidict": """
d = gp.tupledict({(1, 'a'): 5.0, (2, 'a'): 6, (2, 'b'): 7})
print(d.sum('*', 'a'), d.sum(2), d.prod({(2, 'b'): 2}), d.select(2, '*'))
keys, cost, cap = gp.multidict({'p': [2, 10], 'q': [3, 20]})
print(keys, cost, cap)
m = gp.Model(); x = m.addVars(keys, ub=cap, obj=cost, name='x'); m.ModelSense = GRB.MAXIMIZE; m.optimize()
""",
    # ------------------------------------------------------------------ addVars arguments
    "addvars_dict_bounds_ignore_unknown_keys": """
m = gp.Model(); x = m.addVars(3, ub={0: 1, 7: 5, 'a': 2}, lb={2: 1}, obj={1: 3, (9, 9): 1}, name='x')
y = m.addVars([(1, 2), (3, 4)], ub={(1, 2): 4}, vtype={(3, 4): 'I'}, name={(1, 2): 'first'})
m.update()
print([(v.LB, v.UB, v.Obj, v.VType) for v in m.getVars()], [v.VarName for v in y.values()])
m.addConstr(x.sum() + y.sum() <= 20); m.setObjective(x.sum() + 2 * y.sum(), GRB.MAXIMIZE); m.optimize()
""",
    "addvars_iterables_by_position": """
import numpy as np, pandas as pd
m = gp.Model()
a = m.addVars(6, ub=range(6), name='a')
b = m.addVars(3, lb=np.array([1, 2, 3]), ub=(4, 5, 6), name='b')
c = m.addVars(2, 2, ub=np.array([[1, 2], [3, 4]]), name='c')
d = m.addVars(['p', 'q', 'r'], obj=pd.Series([1.0, 2.0, 3.0], index=['r', 'q', 'p']), ub=2, name='d')
e = m.addVars(3, lb=pd.Series([5, 6, 7], index=[2, 1, 0]), ub=[[8, 9], [10]], name='e')
f = m.addVars(2, ub=(v for v in [7, 8]), vtype=np.array(['I', 'C']), name='f')
g = m.addVars(2, ub=np.float64(2.5), lb=np.int64(1), name='g')
m.update()
print([(v.VarName, v.LB, v.UB, v.Obj, v.VType) for v in m.getVars()])
m.setObjective(a.sum() + b.sum() + c.sum() + e.sum() + f.sum() + g.sum() + d.prod({'p': 1}), GRB.MAXIMIZE)
m.optimize()
""",
    "addvars_length_mismatch_and_bad_values": """
import numpy as np
m = gp.Model()
for bad in ("m.addVars(3, ub=[1, 2])", "m.addVars(3, ub=range(6))", "m.addVars(2, name=['a'])",
            "m.addVars(2, ub=np.array(3.0))", "m.addVar(lb=[1])", "m.addVar(ub='3')", "m.addVars(2, lb=None)"):
    try:
        eval(bad)
        print('ok', bad)
    except Exception as error:
        print(type(error).__name__)
m.optimize()
""",
    # ------------------------------------------------------------------ remove
    "remove_lists_of_tupledicts_and_mixed": """
m = gp.Model(); x = m.addVars(3, ub=4, name='x'); y = m.addVar(ub=2, name='y')
c = m.addConstrs((x[i] <= i for i in range(3)), name='c'); d = m.addConstr(y <= 1, name='d')
m.setObjective(x.sum() + y, GRB.MAXIMIZE); m.update()
m.remove([c, d]); m.update(); print(m.NumVars, m.NumConstrs)
m.remove([[x[0]], {'k': x[1]}, (x[1],)]); m.update(); print(m.NumVars, [v.VarName for v in m.getVars()])
for bad in ('m.remove(3)', 'm.remove(v for v in [y])', 'm.remove({y})', 'm.remove(gp.Model().addVar())'):
    try:
        eval(bad)
    except Exception as error:
        print(type(error).__name__, error)
m.optimize()
""",
    # ------------------------------------------------------------------ multiple objectives
    "multiobj_hierarchical_lp": """
m = gp.Model(); x = m.addVar(ub=10, name='x'); y = m.addVar(ub=10, name='y')
m.addConstr(x + y <= 12); m.ModelSense = GRB.MAXIMIZE
m.setObjectiveN(x, 0, priority=2, name='first')
m.setObjectiveN(y + 1, 1, priority=1, abstol=0, reltol=0)
m.setObjectiveN(x - y, 2, priority=1, weight=2)
m.update(); print(m.NumObj, m.IsMultiObj, m.getObjective(0), '|', m.getObjective(1), '|', m.getObjective(2))
m.optimize(); print(m.Status, [round(v.X, 6) for v in m.getVars()])
for i in range(m.NumObj):
    m.Params.ObjNumber = i
    print(i, round(m.ObjNVal, 6), m.ObjNPriority, m.ObjNWeight, m.ObjNName, m.ObjNAbsTol, m.ObjNRelTol, m.ObjNCon)
print(m.getAttr('ObjN', [x, y]), x.ObjN)
for attr in ('ObjBound', 'MIPGap'):
    print(attr, hasattr(m, attr))
""",
    "multiobj_hierarchical_mip_reltol": """
m = gp.Model(); a = m.addVar(vtype='I', ub=7, name='a'); b = m.addVar(vtype='I', ub=7, name='b')
m.addConstr(a + b <= 9)
m.setObjectiveN(a + b, 0, priority=5, reltol=0.2)
m.setObjectiveN(a - 2 * b, 1, priority=1)
m.ModelSense = GRB.MAXIMIZE; m.optimize()
print(m.Status, a.X, b.X)
m.Params.ObjNumber = 1; print(m.ObjNVal)
""",
    "multiobj_blended_with_plain_objective": """
m = gp.Model(); a = m.addVar(ub=1, name='a'); b = m.addVar(ub=2, name='b'); m.addConstr(a + b <= 2)
m.setObjective(a + b, GRB.MAXIMIZE); m.setObjectiveN(-a, 1, weight=3)
m.update(); print(m.NumObj, m.getObjective(0), '|', m.getObjective(1))
m.optimize(); print(m.Status, round(a.X, 6) + 0.0, round(b.X, 6))
""",
    "multiobj_single_weighted_and_missing_index": """
m = gp.Model(); a = m.addVar(ub=3, name='a'); m.setObjectiveN(a, 0, weight=-1); m.ModelSense = GRB.MAXIMIZE
m.optimize(); print(m.Status, m.NumObj, m.IsMultiObj, round(a.X, 6) + 0.0)
m2 = gp.Model(); c = m2.addVar(ub=1, name='c'); m2.setObjectiveN(c, 2); m2.update()
print(m2.NumObj, m2.getObjective(0), '|', m2.getObjective(2))
try:
    m2.setObjectiveN(c * c, 1)
except Exception as error:
    print(type(error).__name__, error)
""",
    "multiobj_mip_level_allowance_near_zero": """
m = gp.Model(); x = m.addVars(1, 3, ub=1, name='x'); b = m.addVar(vtype=GRB.BINARY, name='b')
m.addConstrs(x.sum(i, '*') <= 2 for i in range(3))
m.addConstr((b == 0) >> (2 * x.sum() <= 0)); m.addConstr(b >= 0.5)
m.ModelSense = GRB.MINIMIZE
m.setObjectiveN(7 * x[0, 0] - 5 * x[0, 2], 0, priority=1)
m.setObjectiveN(2 * x.sum(), 1, priority=3)
m.optimize()
print(m.Status, round(m.ObjVal * 1e6, 2), round(x[0, 2].X * 1e7, 1))
""",
    "multiobj_lexicographic_assignment": """
m = gp.Model()
w = m.addVars(3, 3, vtype=GRB.BINARY, name='w')
cost = [[4, 2, 8], [4, 3, 7], [3, 1, 6]]
time = [[1, 5, 2], [2, 1, 4], [5, 2, 1]]
m.addConstrs(w.sum(i, '*') == 1 for i in range(3)); m.addConstrs(w.sum('*', j) == 1 for j in range(3))
m.setObjectiveN(gp.quicksum(cost[i][j] * w[i, j] for i in range(3) for j in range(3)), 0, priority=1, abstol=2)
m.setObjectiveN(gp.quicksum(time[i][j] * w[i, j] for i in range(3) for j in range(3)), 1, priority=0)
m.optimize()
print(m.Status, sorted(k for k, v in w.items() if v.X > 0.5))
m.Params.ObjNumber = 1; print(round(m.ObjNVal, 6))
""",
    # ------------------------------------------------------------------ matrix API, Column
    "column_adds_a_variable_to_constraints": """
m = gp.Model(); x = m.addVar(ub=4, name='x'); c1 = m.addConstr(x <= 3, name='c1'); c2 = m.addConstr(x >= 0, name='c2')
m.update()
col = gp.Column([1.0, 2.0], [c1, c2]); col.addTerms(0.5, c1)
print(col.size(), col.getCoeff(0), col.getConstr(1).ConstrName)
y = m.addVar(ub=10, obj=1.0, name='y', column=col)
z = m.addVar(obj=-1, name='z', column=gp.Column(1, c1))
m.ModelSense = GRB.MAXIMIZE; m.update(); print(m.getRow(c1), '|', m.getRow(c2)); m.optimize()
print(round(y.X, 6), round(z.X, 6))
""",
    # ------------------------------------------------------------------ parameters and pool
    "stops_and_cutoff": """
def knapsack(param, value):
    model = gp.Model(); x = model.addVars(8, vtype='B', name='x')
    w = [12, 7, 11, 8, 9, 6, 5, 14]; v = [24, 13, 23, 15, 16, 10, 8, 30]
    model.addConstr(x.prod(dict(enumerate(w))) <= 30)
    model.setObjective(x.prod(dict(enumerate(v))), GRB.MAXIMIZE)
    if param:
        model.setParam(param, value)
    model.optimize(); return model
best = knapsack(None, 0).ObjVal
for param in ('BestObjStop', 'BestBdStop', 'Cutoff'):
    for value in (best - 10, best, best + 1):
        model = knapsack(param, value)
        print(param, value - best, model.Status, model.SolCount > 0, round(model.ObjVal, 6) if model.SolCount else None)
m = knapsack('Cutoff', best + 5)
""",
    "pool_attributes": """
m = gp.Model(); x = m.addVars(4, vtype='I', ub=3, name='x')
m.addConstr(x.sum() <= 7); m.setObjective(x.prod({0: 3, 1: 2, 2: 2, 3: 1}), GRB.MAXIMIZE); m.optimize()
print(m.SolCount >= 1, round(m.PoolObjVal, 6), [round(v.Xn) for v in x.values()] == [round(v.X) for v in x.values()])
lp = gp.Model(); z = lp.addVar(ub=3, name='z'); lp.setObjective(z, GRB.MAXIMIZE); lp.optimize()
for attr in ('lp.SolCount', 'lp.PoolObjVal', 'z.Xn'):
    try:
        print(attr, eval(attr))
    except Exception as error:
        print(attr, type(error).__name__, error)
""",
    "pool_attribute_errors_by_case": """
def show(label, read):
    try:
        print(label, read())
    except Exception as error:
        print(label, type(error).__name__, error)
n = gp.Model(); y = n.addVar(vtype='I'); n.update()
show('unsolved', lambda: n.PoolObjVal); show('unsolved', lambda: n.PoolObjBound); show('unsolved', lambda: y.Xn)
m = gp.Model(); x = m.addVars(2, vtype='I', ub=3); m.addConstr(x.sum() >= 1); m.setObjective(x.sum(), GRB.MAXIMIZE); m.optimize()
m.Params.SolutionNumber = 5
show('beyond', lambda: m.PoolObjVal); show('beyond', lambda: m.PoolObjBound); show('beyond', lambda: x[0].Xn)
lp = gp.Model(); z = lp.addVar(ub=3); lp.addConstr(z >= 5); lp.optimize()
show('lp', lambda: lp.PoolObjVal); show('lp', lambda: z.Xn); show('lp', lambda: lp.PoolObjBound)
for sense in (GRB.MINIMIZE, GRB.MAXIMIZE):
    k = gp.Model(); w = k.addVars(2, vtype='I', ub=3); k.addConstr(w.sum() >= 9); k.ModelSense = sense; k.optimize()
    show('infeasible', lambda: k.PoolObjBound); show('infeasible', lambda: k.PoolObjVal); show('infeasible', lambda: w[0].Xn)
""",
    "multiobj_with_quadratic_terms_is_gurobis_error": """
m = gp.Model(); x = m.addVar(ub=3, name='x'); y = m.addVar(ub=2, name='y')
try:
    m.setObjectiveN(x * x + y, 0)
except gp.GurobiError as error:
    print('setObjectiveN', error.errno, error)
m.setObjectiveN(x + y, 1, priority=0); m.setObjective(x * x + y)
try:
    m.optimize()
except gp.GurobiError as error:
    print('optimize', error.errno, error)
print(m.Status)
""",
}

CASES.update(
    {
        # -------------------------------------------------------------- general constraints
        "indicator_constraints_big_m": """
m = gp.Model(); x = m.addVars(3, ub=10, name='x'); b = m.addVars(3, vtype=GRB.BINARY, name='b')
m.addConstrs((b[i] == 1) >> (x[i] <= 2 + i) for i in range(3))
m.addConstr((b[0] == 0) >> (x[0] + x[1] >= 12), name='alt')
m.addGenConstrIndicator(b[2], False, x[2] - x[1], GRB.EQUAL, 1.5)
m.addConstr(b.sum() >= 1)
m.setObjective(x.sum() - 3 * b.sum(), GRB.MAXIMIZE); m.optimize()
print(m.Status, [round(v.X, 6) for v in x.values()], [round(v.X) for v in b.values()], m.NumGenConstrs)
""",
        "indicator_on_integer_and_continuous_flags": """
m = gp.Model(); f = m.addVar(vtype='I', ub=2, name='f'); g = m.addVar(ub=1, name='g'); x = m.addVar(ub=5, name='x')
m.addConstr((f == 1) >> (x <= 2)); m.addConstr((g == 0) >> (x <= 1))
m.setObjective(x + f + 0.5 * g, GRB.MAXIMIZE); m.optimize()
print(m.Status, round(x.X, 6), round(f.X), round(g.X))
""",
        "indicator_needs_finite_bounds": """
m = gp.Model(); b = m.addVar(vtype='B', name='b'); x = m.addVar(lb=-GRB.INFINITY, name='x')
m.addConstr((b == 0) >> (x == 2)); m.addConstr(x <= 7); m.setObjective(x + b, GRB.MAXIMIZE)
try:
    m.optimize()
except gp.GurobiError as error:
    print('refused', getattr(error, 'needs_gurobi', False))
""",
        "max_min_abs_general_constraints": """
m = gp.Model(); x = m.addVar(lb=-4, ub=3, name='x'); y = m.addVar(lb=-2, ub=6, name='y')
hi = m.addVar(lb=-10, ub=10, name='hi'); lo = m.addVar(lb=-10, ub=10, name='lo'); ab = m.addVar(name='ab')
m.addConstr(hi == gp.max_(x, y, constant=1.5)); m.addConstr(lo == gp.min_([x, y], constant=-1))
m.addConstr(ab == gp.abs_(x)); m.addConstr(x + y == 1)
m.setObjective(2 * ab - hi + lo, GRB.MAXIMIZE); m.optimize()
print(m.Status, [round(v.X, 6) + 0.0 for v in m.getVars()])
m.setObjective(hi - lo + ab, GRB.MINIMIZE); m.optimize(); print(m.Status, round(m.ObjVal, 6))
""",
        "general_constraint_edge_cases": """
m = gp.Model(); r = m.addVar(lb=-10, ub=10, name='r'); s = m.addVar(lb=-3, ub=3, name='s')
c = m.addVar(lb=-10, ub=10, name='c'); d = m.addVar(lb=-5, ub=5, name='d'); x = m.addVar(lb=-4, ub=3, name='x')
m.addConstr(r == gp.max_(r, constant=2)); m.addConstr(s == gp.abs_(s)); m.addGenConstrMax(c, [], constant=3)
m.addConstr(d == gp.max_(x, x, constant=-1)); m.setObjective(r + s + c + d - 2 * x, GRB.MINIMIZE); m.optimize()
print(m.Status, [round(v.X, 6) + 0.0 for v in m.getVars()])
e = gp.Model(); t = e.addVar(lb=-10, ub=10); e.addGenConstrMax(t, []); e.setObjective(t, GRB.MAXIMIZE)
try:
    e.optimize()
except gp.GurobiError as error:
    print(type(error).__name__, error.errno, error)
""",
        "max_over_unbounded_variable_is_refused": """
m = gp.Model(); r = m.addVar(lb=-10, ub=10, name='r'); x = m.addVar(lb=-GRB.INFINITY, ub=5, name='x')
m.addConstr(r == gp.max_(x, 1)); m.addConstr(x >= -3); m.setObjective(r + x, GRB.MINIMIZE)
try:
    m.optimize()
except gp.GurobiError as error:
    print('refused', getattr(error, 'needs_gurobi', False))
""",
        "and_or_general_constraints": """
m = gp.Model(); b = m.addVars(4, vtype=GRB.BINARY, name='b'); r = m.addVar(vtype=GRB.BINARY, name='r')
s = m.addVar(vtype=GRB.BINARY, name='s'); e = m.addVar(vtype='B', name='e'); o = m.addVar(vtype='B', name='o')
m.addConstr(r == gp.and_(b[0], b[1], b[2])); m.addConstr(s == gp.or_([b[2], b[3]]))
m.addGenConstrAnd(e, []); m.addGenConstrOr(o, [])
m.addConstr(b.sum() <= 3)
m.setObjective(4 * r + 2 * s - b.sum() + e - o, GRB.MAXIMIZE); m.optimize()
print(m.Status, [round(v.X) for v in m.getVars()])
""",
        "and_over_continuous_operands": """
m = gp.Model(); b = m.addVar(ub=1, name='b'); c = m.addVar(ub=1, name='c'); r = m.addVar(vtype='B', name='r')
m.addConstr(r == gp.and_(b, c)); m.setObjective(r - 0.5 * b, GRB.MAXIMIZE); m.optimize()
print(m.Status, round(b.X, 6), round(c.X, 6), round(r.X))
""",
        "norm_and_pwl_stay_refused": """
m = gp.Model(); x = m.addVar(ub=3, name='x'); y = m.addVar(name='y')
m.addGenConstrPWL(x, y, [0, 1, 3], [0, 2, 3]); m.setObjective(y, GRB.MAXIMIZE)
try:
    m.optimize()
except gp.GurobiError as error:
    print('refused', type(error).__name__)
""",
        # -------------------------------------------------------------- callbacks
        "lazy_subtour_callback": """
import itertools, math
points = [(0, 0), (4, 1), (1, 5), (6, 4), (3, 3), (7, 0), (2, 8), (5, 7)]
n = len(points)
dist = {(i, j): math.dist(points[i], points[j]) for i in range(n) for j in range(i)}
m = gp.Model(); m.Params.LazyConstraints = 1
e = m.addVars(dist.keys(), obj=dist, vtype=GRB.BINARY, name='e')
for i, j in list(e.keys()):
    e[j, i] = e[i, j]
m.addConstrs(e.sum(i, '*') == 2 for i in range(n))

def subtour(edges):
    unvisited, best = list(range(n)), list(range(n + 1))
    while unvisited:
        cycle, neighbours = [], unvisited
        while neighbours:
            current = neighbours[0]; cycle.append(current); unvisited.remove(current)
            neighbours = [j for i, j in edges.select(current, '*') if j in unvisited]
        if len(cycle) < len(best):
            best = cycle
    return best

calls = []
def cut(model, where):
    if where == GRB.Callback.MIPSOL:
        values = model.cbGetSolution(model._e)
        chosen = gp.tuplelist((i, j) for i, j in model._e.keys() if values[i, j] > 0.5)
        tour = subtour(chosen)
        calls.append(model.cbGet(GRB.Callback.MIPSOL_OBJ) > 0)
        if len(tour) < n:
            model.cbLazy(gp.quicksum(model._e[i, j] for i, j in itertools.combinations(tour, 2)) <= len(tour) - 1)

m._e = e
m.optimize(cut)
print(m.Status, round(m.ObjVal, 4), m.NumConstrs, all(calls))
""",
        "callback_errors_are_printed_and_ignored": """
# a fresh model each time: Gurobi warm-starts a re-solve from the previous solution, and which
# incumbents it then reports to MIPSOL is its own business
def fresh(lazy):
    model = gp.Model(); z = model.addVars(3, vtype='B', name='z'); model.setObjective(z.sum(), GRB.MAXIMIZE)
    model._z = z; model.Params.LazyConstraints = lazy
    return model

def pair(model, where):
    if where == GRB.Callback.MIPSOL:
        model.cbLazy(model._z[0] + model._z[1] <= 1)

m = fresh(0); m.optimize(pair); print('without LazyConstraints', m.Status, m.ObjVal)

def boom(model, where):
    if where == GRB.Callback.MIPSOL:
        raise ValueError('boom')

m = fresh(1); m.optimize(boom); print('raising', m.Status, m.ObjVal)
m = fresh(1); m.optimize(pair); print('lazy', m.Status, m.ObjVal, m.NumConstrs)

def three(model, where):
    if where == GRB.Callback.MIPSOL:
        model.cbLazy(model._z[0], GRB.LESS_EQUAL, 0)
        model._seen = (model.cbGetSolution([model._z[0]]) in ([0.0], [1.0]), type(model.cbGetSolution(model._z)).__name__)

m = fresh(1); m.optimize(three); print('three-argument form', m.Status, m.ObjVal, m._seen)
try:
    m.cbGet(GRB.Callback.MIPSOL_OBJ)
except gp.GurobiError as error:
    print('outside a callback', type(error).__name__)
lp = gp.Model(); w = lp.addVar(ub=2); lp.setObjective(w, GRB.MAXIMIZE); seen = []
lp.optimize(lambda model, where: seen.append(where == GRB.Callback.MIPSOL)); print('lp', lp.ObjVal, any(seen))
""",
    }
)

CASES.update(
    {
        # -------------------------------------------------------------- matrix API
        "mvar_lp_with_dense_and_sparse_matrices": """
import numpy as np, scipy.sparse as sp
m = gp.Model(); x = m.addMVar(3, lb=0, ub=[1, 2, 3], name='x'); y = m.addMVar((2, 2), vtype='I', ub=5, name='y')
m.update()
print(x.shape, x.ndim, x.size, x[0].shape, y[0].shape, x.tolist(), list(x.VarName), y.UB.tolist())
A = np.array([[1.0, 2, 0], [0, 1, 1]]); b = np.array([4.0, 3])
c = m.addConstr(A @ x <= b, name='c'); c2 = m.addConstr(sp.csr_matrix(A) @ x >= -b, name='d')
m.addConstr(x[0] + y[0, 0] >= 1); m.addConstr(y.sum() <= 7); m.addConstr(b <= A @ x + 10)
m.addMConstr(np.ones((1, 3)), x, '<', np.array([5.0]))
m.setObjective(np.array([1.0, 2, 3]) @ x + y.sum(), GRB.MAXIMIZE); m.update()
print(m.NumVars, m.NumConstrs, [k.ConstrName for k in m.getConstrs()][:4], c.shape, type(c).__name__)
m.optimize(); print(m.Status, round(float(x.X @ np.array([1.0, 2, 3])), 6), c.RHS.tolist(), round(float(c.Slack.sum()), 6))
""",
        "mvar_quadratic_objective_and_elementwise": """
import numpy as np
m = gp.Model(); z = m.addMVar(3, lb=-1, ub=2, name='z'); Q = np.diag([1.0, 2.0, 3.0])
m.addConstr(z.sum() >= 1); m.addConstr(2 * z[0] - z[1] <= 1); m.addConstr(z * np.array([1.0, 1, 1]) <= 1.5)
m.setObjective(z @ Q @ z - np.array([1.0, 0, 1]) @ z); m.optimize()
print(m.Status, [round(v, 4) + 0.0 for v in z.X], type(z @ z).__name__, type(z * z).__name__, type(-z).__name__)
print(type(gp.quicksum(z[i] for i in range(3))).__name__, type(z[0] + 1).__name__, z.T.shape, z.reshape(3, 1).shape)
""",
        "mvar_from_list_and_attributes": """
import numpy as np
m = gp.Model(); v = [m.addVar(ub=i + 1, name=f'v{i}') for i in range(4)]; x = gp.MVar.fromlist(v)
x.Obj = np.array([1.0, -1.0, 2.0, 0.5]); m.ModelSense = GRB.MAXIMIZE; m.addConstr(x[:2].sum() <= 1.5)
m.optimize(); print(m.Status, x.X.tolist(), x.Obj.tolist(), x[1:3].shape, x[[0, 3]].shape)
""",
    }
)

CASES.update(
    {
        # -------------------------------------------------------------- misses on real programs (issue 45)
        "gen_constr_helpers_take_tupledict_values": """
m = gp.Model(); x = m.addVars(['a', 'b', 'c'], lb=-5, ub=[1, 2, 3], name='x')
r = m.addVar(lb=-10, ub=10, name='r'); s = m.addVar(lb=-10, ub=10, name='s')
b = m.addVars(['p', 'q'], vtype='B', name='b'); o = m.addVar(vtype='B', name='o'); a = m.addVar(vtype='B', name='a')
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    m.addGenConstrMin(r, x); m.addGenConstrMax(s, x, constant=0.5)
    m.addGenConstrOr(o, b); m.addGenConstrAnd(a, [b['p'], b['q']])
print([(str(w.message), w.category.__name__, w.filename) for w in caught])
m.addConstr(x.sum() == 1); m.setObjective(r + s - o + 2 * a, GRB.MAXIMIZE); m.optimize()
print(m.Status, round(m.ObjVal, 6), [round(v.X, 6) + 0.0 for v in m.getVars()])
for bad in ("m.addGenConstrMax(r, [[x['a']], x['b']])", "m.addGenConstrMin(r, {'k': 1.5})",
            "m.addGenConstrAnd(a, {1: b['p']})", "m.addGenConstrAbs(r, [x['a']])"):
    try:
        eval(bad)
    except Exception as error:
        print(type(error).__name__, getattr(error, 'errno', None))
""",
        "semicontinuous_above_highs_limit_is_refused": """
m = gp.Model(); x = m.addVar(vtype=GRB.SEMICONT, lb=10, ub=2e5, name='x'); y = m.addVar(ub=50, name='y')
m.addConstr(x + y >= 150000); m.setObjective(x + 2 * y)
try:
    m.optimize()
except gp.GurobiError as error:
    print('refused', getattr(error, 'needs_gurobi', False), 'upper bound 200000' in str(error))
""",
        "semicontinuous_within_highs_limit": """
m = gp.Model(); x = m.addVar(vtype=GRB.SEMICONT, lb=10, ub=1e5, name='x'); y = m.addVar(ub=50, name='y')
m.addConstr(x + y >= 60000); m.setObjective(x + 2 * y); m.optimize()
print(m.Status, round(m.ObjVal, 6), round(x.X, 6), m.NumIntVars)
""",
        "num_scenarios_is_refused": """
m = gp.Model(); x = m.addVars(3, ub=[1, 2, 3], name='x'); m.setObjective(x.sum(), GRB.MAXIMIZE)
try:
    m.NumScenarios = 2; m.update(); m.Params.ScenarioNumber = 1; x[0].ScenNUB = 0.5
    m.optimize(); print(m.Status, m.ScenNObjVal)
except gp.GurobiError as error:
    print('refused', getattr(error, 'needs_gurobi', False), 'NumScenarios = 2' in str(error))
""",
        "num_scenarios_reads_zero": """
m = gp.Model(); x = m.addVar(ub=3, name='x'); m.setObjective(x, GRB.MAXIMIZE)
print(m.NumScenarios, m.getAttr('NumScenarios')); m.NumScenarios = 0; m.optimize(); print(m.Status, m.NumScenarios)
""",
        "portfolio_qp_with_small_covariances": """
import numpy as np
rng = np.random.default_rng(0); n = 20
F = rng.normal(size=(n, 3)) * 5e-3; S = F @ F.T + np.diag(rng.uniform(1e-6, 1e-5, n)); mu = rng.uniform(0.001, 0.02, n)
m = gp.Model('portfolio'); m.Params.TimeLimit = 30; w = m.addVars(n, ub=1, name='w')
m.addConstr(w.sum() == 1, name='budget'); m.addConstr(gp.quicksum(mu[i] * w[i] for i in range(n)) >= float(np.median(mu)), name='ret')
m.setObjective(gp.quicksum(S[i, j] * w[i] * w[j] for i in range(n) for j in range(n)), GRB.MINIMIZE); m.optimize()
print(m.Status, round(m.ObjVal * 1e7, 2), round(sum(v.X for v in w.values()), 6))
""",
        "read_lp_and_mps_files_back": """
m = gp.Model('demo'); x = m.addVars(3, ub=[4, 5, 6], name='x'); y = m.addVar(vtype='I', lb=-2, ub=7, name='y[k]')
z = m.addVar(vtype='B', name='z'); s = m.addVar(vtype='S', lb=2, ub=9, name='s'); f = m.addVar(lb=-GRB.INFINITY, name='free')
m.addConstrs((x[i] + y <= 6 + i for i in range(3)), name='cap'); m.addConstr(x[0] - y >= -3, name='low')
m.addConstr(x[1] + s + f == 5, name='tie'); m.addRange(x[2] + y + z, 1, 8, name='rg'); m.addConstr(f <= 2)
m.setObjective(3 * x[0] + 2 * y + 5 * z - s + 0.5 * f + x.sum() + 7, GRB.MAXIMIZE)
q = gp.Model('qp'); a = q.addVar(lb=-1, ub=3, name='a[0]'); c = q.addVar(ub=2, name='c')
q.addConstr(a + c >= 1, name='k'); q.setObjective(a * a + 2 * a * c + 3 * c * c - a + 1.5)
m.write('demo.lp'); m.write('demo.mps'); q.write('qp.lp'); q.write('qp.mps')
for path in ('demo.lp', 'demo.mps', 'qp.lp', 'qp.mps'):
    r = gp.read(path)
    print(path, repr(r.ModelName), r.NumVars, r.NumConstrs, r.ModelSense, r.ObjCon, r.IsQP, r.NumIntVars, r.NumBinVars)
    print([(v.VarName, v.LB, v.UB, v.VType, v.Obj) for v in r.getVars()])
    print([(k.ConstrName, k.Sense, k.RHS) for k in r.getConstrs()], r.getRow(r.getConstrs()[0]))
    r.optimize(); print(r.Status, round(r.ObjVal, 6), [round(v.X, 6) + 0.0 for v in r.getVars()])
model = gp.read('demo.mps'); model.optimize()
""",
        "read_refuses_what_highs_cannot_parse": """
m = gp.Model('ind'); x = m.addVar(lb=-3, ub=4, name='x'); b = m.addVar(vtype='B', name='b')
m.addConstr((b == 1) >> (x <= 1), name='ind'); m.setObjective(x + b, GRB.MAXIMIZE)
open('ind.lp', 'w').write('Maximize\\n x + b\\nSubject To\\n ind: b = 1 -> x <= 1\\nBounds\\n -3 <= x <= 4\\nBinaries\\n b\\nEnd\\n')
try:
    m = gp.read('ind.lp'); m.optimize()
except gp.GurobiError as error:
    print('refused', getattr(error, 'needs_gurobi', False), 'indicator constraints' in str(error))
""",
    }
)
