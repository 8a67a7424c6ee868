"""The layer's own name and version (``__version__`` is the gurobipy API level it reproduces).

Plain literals in a file of their own: the harness reads them as text (``ast``), without
importing the layer, to record which layer a run used.
"""

from __future__ import annotations

NAME = "gurobipy_highs"
#: 1.1 (issue 32): tupledict patterns and prod as gurobipy 13, addVars arguments as gurobipy reads
#: them, multiple objectives, lazy callbacks, general constraints by big-M, the matrix API, Column,
#: Cutoff/BestObjStop/BestBdStop, PoolObjVal. Samples record it, so results from before and after
#: can be told apart.
VERSION = "1.1"
