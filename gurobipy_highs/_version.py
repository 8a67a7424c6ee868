"""The layer's own name and version (``__version__`` is the gurobipy API level it reproduces).

Plain literals in a file of their own: the harness reads them as text (``ast``), without
importing the layer, to record which layer a run used.
"""

from __future__ import annotations

NAME = "gurobipy_highs"
VERSION = "1.0"
