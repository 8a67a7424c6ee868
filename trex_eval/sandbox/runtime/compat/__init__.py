"""Stand-ins for solver packages, importable under the real package names.

The sandbox puts this folder first on ``sys.path`` when a program should run without a
commercial solver: ``import gurobipy`` then loads :mod:`.gurobipy` (the HiGHS-based layer).
"""
