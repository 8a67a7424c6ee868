"""Small gurobipy programs that print what the API returns, for differential tests.

Each snippet runs under real gurobipy and under the gurobipy_highs layer; the test compares their
printed output and the exception (type and message) that ended them. Values that depend on the
solver path (objective digits, duals of the optimal basis) are printed rounded, and the
snippets use non-degenerate models so that the optimal basis is unique.
"""

from __future__ import annotations

HEADER = "import gurobipy as gp\nfrom gurobipy import GRB\ngp.setParam('OutputFlag', 0)\n"

SNIPPETS: dict[str, str] = {
    "linear_expressions": """
m = gp.Model('e'); x = m.addVar(name='x'); y = m.addVar(name='y'); m.update()
for e in [x, 2 * x - y, x + y + 3, x - x, gp.LinExpr(), 0 * x, x + 2.5, -x - 1e-7 * y + 1e20,
          x / 4, 3 - x, sum([x, y, 3]), gp.quicksum([x, y, 2]), gp.quicksum([]), -(x + y)]:
    print(repr(e), str(e))
e = gp.LinExpr([1, 2], [x, y]); print(e, e.size(), e.getVar(1), e.getCoeff(1), e.getConstant())
e = gp.LinExpr([(3, x), (4, y)]); print(e)
e = gp.LinExpr(); e.addTerms([1, 2], [x, y]); e.addTerms(3, x); e.addConstant(4); e.add(x, 5); print(e)
e.remove(x); print(e)
a = x + y; b = a; b += x; print(a)
c = x + y; d = c + x; print(c, d)
print(list(gp.LinExpr([(1, x), (2, y)]).linTerms()))
print(x ** 1, x ** 0)
for bad in ('+x', '+(x + y)', '+(x * y)', 'abs(x + y)', 'x + y < 3', 'x < y'):
    try:
        print(eval(bad))
    except Exception as error:  # messages name gurobipy's compiled classes: compare types only
        print(type(error).__name__)
""",
    "quadratic_expressions": """
m = gp.Model('q'); x = m.addVar(name='x'); y = m.addVar(name='y'); m.update()
q = x * y + 3 * x * x + y + 2
print(repr(q), q.size(), q.getVar1(0), q.getVar2(0), q.getCoeff(1), q.getLinExpr())
print(list(q.quadTerms()))
for e in [x ** 2, (x + y) ** 2, (x + 1) ** 2, (x + 2 * y) * (x - y), q * 2, q / 2, -q, q - q, x * x + x]:
    print(e)
q += x; print(q)
""",
    "temp_constraints": """
m = gp.Model('t'); x = m.addVar(name='x'); y = m.addVar(name='y'); m.update()
for t in [x <= 3, x >= y, x == y, 2 * x + y == x - 3, 4 <= x, x * x >= 2, x + 1 <= x * y]:
    print(repr(t))
for bad in ["1 <= x + y <= 5", "x in [y]", "x != y", "bool(x <= 1)"]:
    try:
        print(eval(bad))
    except Exception as error:
        print(type(error).__name__, error)
print(x in [x, y])
""",
    "add_vars_keys_and_names": """
m = gp.Model()
a = m.addVars(2, 3)
b = m.addVars(['p', 'q r'], name='b')
c = m.addVars([(1, 'u'), (2, 'v')], name='c')
d = m.addVars(range(2), ['s', 't'], lb=-1, name='d')
e = m.addVars(3, lb=[1, 2, 3], ub={0: 5, 1: 6, 2: 7}, vtype=[GRB.INTEGER, GRB.BINARY, 'C'], name='e')
f = m.addVars([1.5, 2], name='f')
g = m.addVars(2, name=['g0', 'g1'])
h = m.addVars(gp.tuplelist([(1, 2), (3, 4)]), obj=2.5, name='h')
i = m.addVars(0, name='i')
m.update()
print([v.VarName for v in m.getVars()])
for td in (a, b, c, d, e, f, g, h, i):
    print(type(td).__name__, list(td.keys()))
print([(v.LB, v.UB, v.VType, v.Obj) for v in m.getVars()])
""",
    "add_constrs_keys": """
m = gp.Model()
x = m.addVars(2, 2, 2, name='x')
c = m.addConstrs(
    (gp.quicksum(x[b, a, k] for k in range(2)) <= 1 for b in range(2) for a in range(2) if a != 1 or b != 0),
    name='c',
)
def inner():
    K = range(2)
    constraints = (gp.quicksum(x[zz, a, k] for k in K) <= 1 for zz in range(2) for a in range(2))
    return m.addConstrs(constraints, name='d')
d = inner()
e = m.addConstrs((x[i, j, 0] <= 1 for (i, j) in [(0, 1), (1, 0)]), name='e')
arcs = [(0, 1), (1, 1)]
f = m.addConstrs(x[a + (0,)] >= 0 for a in arcs)
g = m.addConstrs((x[i, 0, 0] <= i for i in range(2) for _ in range(1)), name='g')
m.update()
for td in (c, d, e, f, g):
    print(list(td.keys()))
print([cc.ConstrName for cc in m.getConstrs()])
try:
    m.addConstrs([x[0, 0, 0] <= 1 for i in range(2)])
except Exception as error:
    print(type(error).__name__, error)
""",
    "tupledict_and_tuplelist": """
m = gp.Model(); x = m.addVar(name='x'); y = m.addVar(name='y'); m.update()
d = gp.tupledict({(1, 2): x, (1, 3): y, (2, 3): x})
print(d.sum(), d.sum(1, '*'), d.sum('*', 3), d.sum('*', [2, 3]), d.sum(5, '*'))
print(d.select(1, '*'), d.select('*', 3), d.select())
print(d.prod({(1, 2): 2, (2, 3): 5}), d.prod({(1, 2): 2}, '*', 3))
t = gp.tuplelist([(1, 2), (1, 3), (2, 3)])
print(t.select(1, '*'), t.select('*', [2, 3]), type(t.select(1, '*')).__name__)
print(gp.multidict({'a': [1, 2], 'b': [3, 4]}))
print(gp.multidict({'a': 1, 'b': 3}))
print(gp.tupledict().sum())
""",
    "constraint_forms": """
m = gp.Model('forms'); x = m.addVar(name='x'); y = m.addVar(name='y')
m.addConstr(True, name='t'); m.addConstr(False, name='f'); m.addConstr(3 <= 4, name='n')
m.addLConstr(x, '<', 4, 'l1'); m.addLConstr(x + 2, GRB.GREATER_EQUAL, x * 0 + 1, 'l2')
m.addLConstr(x <= 9, name='l3')
m.addRange(x + 2 * y, 0, 8, 'ar'); m.addRange(x + 2 * y, 1, 3)
m.addConstr(x + y == [1, 5], name='rr')
m.addConstr(x + 0 * y + x <= 7, name='merge')
for bad in ('m.addConstr(5)', 'm.addConstr(x)', "m.addConstr(x + 1, '<=', 3)"):
    try:
        eval(bad)
    except Exception as error:
        print(type(error).__name__, error)
m.update()
for c in m.getConstrs():
    print(c.ConstrName, c.Sense, c.RHS, m.getRow(c))
print([v.VarName for v in m.getVars()], [(v.LB, v.UB) for v in m.getVars()])
m.write('forms.lp'); print(open('forms.lp').read())
""",
    "objective_and_rows": """
m = gp.Model('rows'); v = [m.addVar(name=f'v{i}') for i in range(5)]
m.setObjective(v[0] * v[2] + v[0] * v[1] + v[0] * v[0] + v[3] * v[1] + 2 * v[4] + v[4] + 7, GRB.MAXIMIZE)
c = m.addConstr(v[3] + v[1] - v[3] + 2 * v[0] + v[1] >= 1, name='c')
q = m.addQConstr(v[0] * v[2] + v[2] * v[0] + v[1] * v[1] <= 4, name='q')
print(m.getObjective())
m.update()
obj = m.getObjective()
print(obj, obj.size())
print([(obj.getVar1(i).VarName, obj.getVar2(i).VarName, obj.getCoeff(i)) for i in range(obj.size())])
print(obj.getLinExpr())
print(m.getRow(c), m.getQCRow(q))
print(m.ModelSense, m.ObjCon, m.NumVars, m.NumConstrs, m.NumQConstrs, m.NumNZs, m.IsQP, m.IsQCP, m.IsMIP)
""",
    "lazy_update": """
m = gp.Model('lazy'); x = m.addVar(name='x', ub=3); y = m.addVar(name='y'); c = m.addConstr(x <= y)
print(repr(x), m.NumVars, y.index, c.index)
for expr in ('x.VarName', 'x.X', 'hash(x)', 'x.index'):
    try:
        print(eval(expr))
    except Exception as error:
        print(type(error).__name__, error)
m.update(); print(repr(x), m.NumVars, x.index)
x.UB = 5; print(x.UB); m.update(); print(x.UB)
x.setAttr('LB', 1); print(x.getAttr('LB')); m.update(); print(x.LB, x.lb, x.getAttr(GRB.Attr.LB))
m.setObjective(2 * x, GRB.MAXIMIZE); print(m.getObjective(), m.ModelSense); m.update()
print(m.getObjective(), m.ModelSense)
m.ModelSense = GRB.MINIMIZE; m.ObjCon = 4; print(m.ModelSense, m.ObjCon + 0.0); m.update()
print(m.ModelSense, m.ObjCon)
for bad in ('x.Foo', 'm.Foo', 'x.ObjVal', 'm.getAttr("Foo")'):
    try:
        print(eval(bad))
    except Exception as error:
        print(type(error).__name__, error)
try:
    m.foo = 1
except Exception as error:
    print(type(error).__name__, error)
m._mine = 3; x._mine = 4; print(m._mine, x._mine)
""",
    "bounds_on_creation": """
m = gp.Model()
cases = [('B', 0, 0.5), ('B', 0.5, 1), ('B', 0, 5), ('B', -3, 0.5), ('I', 1.5, 3.7), ('I', -2.5, -2.5),
         ('I', 1.000001, 2.999999), ('I', 1e-05, 2.99999), ('N', 1.5, 3.7), ('S', 1.5, 3.7),
         ('C', -1e20, 1e20),
         ('I', -1e19, 1e19), ('C', -1e100, 1e30)]
vs = [m.addVar(lb=lb, ub=ub, vtype=t, name=f'v{i}') for i, (t, lb, ub) in enumerate(cases)]
m.update()
print([(v.LB, v.UB) for v in vs])
vs[4].UB = 2.5; vs[0].VType = 'I'; m.update(); print(vs[4].UB, vs[0].LB, vs[0].UB)
m.write('b.lp'); print(open('b.lp').read())
""",
    "parameters": """
m = gp.Model()
m.setParam('TimeLimit', 10); m.Params.MIPGap = 0.01; m.Params.mipgapabs = 0
print(m.Params.TimeLimit, m.Params.timelimit, m.Params.MIPGap, m.getParamInfo('TimeLimit'))
gp.setParam('OutputFlag', 1); m2 = gp.Model(); m2.setParam(GRB.Param.Threads, 1); m2.setParam('OutputFlag', 0)
for bad in ("m.setParam('Foo', 1)", "m.setParam('TimeLimit', -1)", "m.setParam('timelim', 10)",
            "m.Params.Foo"):
    try:
        print(eval(bad))
    except Exception as error:
        print(type(error).__name__, error, getattr(error, 'errno', None))
env = gp.Env(empty=True); env.setParam('OutputFlag', 0); env.start()
with gp.Model('withenv', env=env) as m3:
    print(m3.Params.OutputFlag, repr(m3))
""",
    "solve_lp_min_and_max": """
for sense in (GRB.MINIMIZE, GRB.MAXIMIZE):
    m = gp.Model('lp'); m.Params.OutputFlag = 0
    x = m.addVar(name='x', ub=8); y = m.addVar(name='y', ub=6)
    c1 = m.addConstr(x + 2 * y <= 14, name='c1'); c2 = m.addConstr(3 * x - y >= 0, name='c2')
    c3 = m.addConstr(x - y <= 2, name='c3')
    m.setObjective(3 * x + 4 * y, sense)
    print(hasattr(m, 'ObjVal'), m.Status)
    m.optimize()
    print(m.Status, hasattr(m, 'ObjVal'), round(m.ObjVal, 6), round(m.objval, 6))
    print([round(v.X, 6) for v in m.getVars()])
    # + 0.0: the sign of a zero dual or slack is solver noise
    print([round(c.Pi, 6) + 0.0 for c in m.getConstrs()], [round(c.Slack, 6) + 0.0 for c in m.getConstrs()],
          [round(v.RC, 6) + 0.0 for v in m.getVars()])
    print([round(v, 6) for v in m.getAttr('X', m.getVars())])
    print({k: round(v, 6) for k, v in m.getAttr('x', gp.tupledict({1: x})).items()})
    print(round((x + 2 * y + 1).getValue(), 6), m.SolCount, m.IsMIP, round(m.ObjBound, 6))
    try:
        print(m.MIPGap)
    except Exception as error:
        print(type(error).__name__, error)
""",
    "solve_milp": """
m = gp.Model('mip'); m.Params.OutputFlag = 0
x = m.addVars(4, vtype=GRB.INTEGER, ub=10, name='x'); b = m.addVar(vtype=GRB.BINARY, name='b')
w = [3, 5, 7, 11]
m.addConstr(gp.quicksum(w[i] * x[i] for i in range(4)) <= 40 + 10 * b, name='cap')
m.addConstr(x.sum() >= 2, name='cnt')
m.setObjective(gp.quicksum((i + 2) * x[i] for i in range(4)) - 3 * b, GRB.MAXIMIZE)
m.optimize()
print(m.Status, round(m.ObjVal, 6), [round(v.X) for v in m.getVars()])
print(m.IsMIP, m.SolCount >= 1, round(m.MIPGap, 6) <= 1e-4)
for attr in ('Pi', 'RC'):
    try:
        print(getattr(m.getConstrs()[0] if attr == 'Pi' else x[0], attr))
    except Exception as error:
        print(type(error).__name__)
""",
    "infeasible_and_unbounded": """
m = gp.Model(); m.Params.OutputFlag = 0; a = m.addVar(name='a'); m.addConstr(a >= 1); m.addConstr(a <= 0)
m.optimize()
print(m.Status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD), hasattr(m, 'ObjVal'), m.SolCount)
for expr in ('a.X', 'm.ObjVal'):
    try:
        print(eval(expr))
    except Exception as error:
        print(type(error).__name__, error)
u = gp.Model(); u.Params.OutputFlag = 0; z = u.addVar(name='z'); u.setObjective(z, GRB.MAXIMIZE); u.optimize()
print(u.Status in (GRB.UNBOUNDED, GRB.INF_OR_UNBD), hasattr(u, 'ObjVal'))
""",
    "modify_after_solve": """
m = gp.Model('mod'); m.Params.OutputFlag = 0; x = m.addVar(name='x', ub=3); m.setObjective(x, GRB.MAXIMIZE)
m.optimize()
print(m.Status, m.ObjVal, x.X)
m.addConstr(x <= 2); print(m.Status, m.ObjVal); m.update(); print(m.Status, hasattr(m, 'ObjVal'))
m.optimize(); print(m.Status, m.ObjVal)
m.setParam('MIPGap', 0.5); m.update(); print(m.Status, m.ObjVal)
m.reset(); print(m.Status, hasattr(m, 'ObjVal'))
""",
    "numpy_operands": """
import numpy as np
m = gp.Model(); x = m.addVar(name='x'); y = m.addVar(name='y'); m.update()
print(np.float64(2.0) * x, x * np.float64(2.0), np.int64(2) + x)
print(repr(np.float64(2.0) <= x), np.float32(0.5) * x)
print(gp.quicksum(np.array([1.0, 2.0])[i] * v for i, v in enumerate([x, y])))
""",
    "error_messages": """
m = gp.Model(); x = m.addVar(name='x')
for bad in ("m.addVar(vtype='Q')", 'm.setObjective(x <= 3)', 'm.setObjective(x, 5)',
            "m.addVar(name='n' * 256)",
            'x * "a"', 'x + None'):
    try:
        eval(bad)
        print('ok', bad)
    except Exception as error:
        print(type(error).__name__, type(error).__mro__[1].__name__)
""",
    "queries_and_removal": """
m = gp.Model('qr'); x = m.addVars(3, name='x'); c = m.addConstr(x[0] + 2 * x[1] + 3 * x[2] <= 4, name='c')
d = m.addConstr(x[1] - x[2] >= -1, name='d'); m.setObjective(x.sum(), GRB.MAXIMIZE); m.update()
print(m.getVarByName('x[1]'), m.getConstrByName('d'), m.getVarByName('zz'), x[2].index, c.index, d.index)
print(m.getCoeff(c, x[1]), x[1].sameAs(x[1]), x[1].sameAs(x[2]))
m.chgCoeff(c, x[1], 5.0); m.chgCoeff(c, x[0], 0); m.update(); print(m.getRow(c))
m.remove(x[1]); m.remove(d); m.update()
print(m.NumVars, m.NumConstrs, [v.VarName for v in m.getVars()], x[2].index, m.getRow(c))
m.write('qr.lp'); print(open('qr.lp').read())
""",
    "solution_file": """
m = gp.Model('s'); m.Params.OutputFlag = 0; x = m.addVar(name='x', ub=2)
y = m.addVar(name='y', vtype='I', ub=3)
m.setObjective(x + y, -1); m.optimize(); m.write('s.sol'); print(open('s.sol').read()); m.write('s.mst')
print(open('s.mst').read())
m.write('s.prm'); print(open('s.prm').read())
""",
    "convex_qp": """
m = gp.Model('qp'); m.Params.OutputFlag = 0; x = m.addVar(name='x', lb=-10); y = m.addVar(name='y', lb=-10)
m.addConstr(x + y >= 1, name='c')
m.setObjective(x * x + 2 * y * y - x * y + 3 * x, GRB.MINIMIZE); m.optimize()
print(m.Status, round(m.ObjVal, 6), round(x.X, 6), round(y.X, 6))
m.setObjective(-x * x - y * y + x, GRB.MAXIMIZE); m.optimize(); print(m.Status, round(m.ObjVal, 6))
""",
    "general_constraint_model": """
m = gp.Model('g'); x = m.addVar(name='x'); y = m.addVar(name='y'); z = m.addVar(name='z', lb=-5)
b = m.addVar(vtype='B', name='b')
m.addConstr(z == gp.max_(x, y, constant=1), name='mx'); m.addConstr(z == gp.min_([x, y]), name='mn')
m.addConstr(z == gp.abs_(x), name='ab'); m.addConstr((b == 1) >> (x + y <= 3), name='ind')
m.addGenConstrIndicator(b, False, x - y, GRB.EQUAL, 2.0)
m.addSOS(GRB.SOS_TYPE1, [x, y], [1, 2]); m.update()
print(m.NumGenConstrs, m.NumSOS)
print([g.GenConstrName for g in m.getGenConstrs()], [g.GenConstrType for g in m.getGenConstrs()])
m.write('g.lp'); print(open('g.lp').read())
""",
    "copy_and_relax": """
m = gp.Model('cr'); m.Params.OutputFlag = 0
x = m.addVars(3, vtype=GRB.INTEGER, ub=4, name='x'); b = m.addVar(vtype=GRB.BINARY, name='b')
m.addConstr(2 * x[0] + 3 * x[1] + 4 * x[2] <= 11 + b, name='c'); m.addRange(x[0] - x[1], -1, 1, 'r')
m.setObjective(3 * x[0] + 4 * x[1] + 5 * x[2] - 0.5 * b, GRB.MAXIMIZE)
m.update(); c = m.copy(); r = m.relax()
c.write('copy.lp'); print(open('copy.lp').read()); r.write('relax.lp'); print(open('relax.lp').read())
for model in (m, c, r):
    model.optimize(); print(model.Status, round(model.ObjVal, 6), model.IsMIP)
""",
}
