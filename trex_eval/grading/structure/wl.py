"""Weisfeiler-Lehman colour refinement on the variable/constraint graph of a model, and the
ORGEval sufficiency test that says when equal colourings prove two graphs isomorphic.

A graph is given as initial node colours plus, per node, its ``(neighbour, edge_label)`` pairs
(undirected: each edge appears in both lists). Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from typing import TypeVar

Label = TypeVar("Label", bound=Hashable)

WL_DETERMINABLE = "WL-determinable"
SYMMETRIC_DECOMPOSABLE = "Symmetric Decomposable."
NOT_DISTINCT = "Due to distinctness."


def md5_refine(
    colours: Sequence[str], neighbours: Sequence[Sequence[tuple[int, str]]]
) -> dict[str, list[int]]:
    """The reference harness's refinement (``wl_test_fast``), reproduced exactly.

    Each round gives node ``v`` the colour ``md5(colour[v] + "|" + "|".join(sorted pairs))``
    with one ``f"{colour[u]}|{label}"`` pair per neighbour ``u``, then groups nodes by colour
    (groups in node order). It returns the grouping of the first round whose number of groups
    equals the previous round's, or of round ``len(colours)`` if none does; the keys are that
    round's md5 hex digests.

    Raises:
        ValueError: the graph has no nodes (the reference crashes there too).
    """
    current = list(colours)
    previous_count = 0
    partition: dict[str, list[int]] | None = None
    for _ in range(len(current)):
        refined = [
            hashlib.md5(
                (
                    current[v] + "|" + "|".join(sorted(f"{current[u]}|{label}" for u, label in neighbours[v]))
                ).encode()
            ).hexdigest()
            for v in range(len(current))
        ]
        partition = {}
        for v, colour in enumerate(refined):
            partition.setdefault(colour, []).append(v)
        if len(partition) == previous_count:
            return partition
        current = refined
        previous_count = len(partition)
    if partition is None:
        raise ValueError("colour refinement of a graph without nodes")
    return partition


def sufficiency(
    classes: Sequence[Sequence[int]], neighbours: Sequence[Sequence[tuple[int, Label]]]
) -> tuple[bool, str]:
    """Whether a stable colouring determines the graph up to isomorphism (ORGEval's test).

    ``classes`` are the colour classes (lists of nodes). The graph is WL-determinable when every
    class is a single node. Otherwise take the nodes of the classes with more than one member,
    and the connected components of the subgraph they induce: the graph is symmetric
    decomposable when no component holds two nodes of the same class.

    Returns ``(True, "WL-determinable")``, ``(True, "Symmetric Decomposable.")`` or
    ``(False, "Due to distinctness.")``.
    """
    class_of: dict[int, int] = {}
    for class_id, members in enumerate(classes):
        if len(members) > 1:
            for node in members:
                class_of[node] = class_id
    if not class_of:
        return True, WL_DETERMINABLE
    seen: set[int] = set()
    for start in class_of:
        if start in seen:
            continue
        seen.add(start)
        stack = [start]
        classes_in_component: set[int] = set()
        while stack:
            node = stack.pop()
            if class_of[node] in classes_in_component:
                return False, NOT_DISTINCT
            classes_in_component.add(class_of[node])
            for neighbour, _ in neighbours[node]:
                if neighbour in class_of and neighbour not in seen:
                    seen.add(neighbour)
                    stack.append(neighbour)
    return True, SYMMETRIC_DECOMPOSABLE
