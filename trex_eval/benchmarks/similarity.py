"""How alike two questions are: difflib's ratio, exactly, at a fraction of its cost, and a tight
upper bound of it that costs less than a millisecond.

:func:`sequence_ratio` returns exactly ``difflib.SequenceMatcher(None, a, b, autojunk=False)
.ratio()``: the same matching blocks, chosen in the same order, so ``benchmarks diff`` pairs
the same problems it always did. difflib finds each longest block by a Python loop over every
position of each character of ``a`` in ``b``, quadratic in the questions' lengths (≈0.1 s for
two 3,000-character questions). Here the run lengths of every diagonal are one array, built a
row at a time by numpy, and each block is the first maximum of a sub-array: the same rule as
difflib's (the earliest end in ``a``, then in ``b``). About 3-4× less CPU on long questions.

:func:`lcs_bound` is ``2·LCS / (|a| + |b|)``, LCS the longest common subsequence, computed with
the bit-parallel recurrence of Allison and Dix (one integer operation per character of ``a``).
difflib's matching blocks are a common subsequence, so the bound is never under the ratio:
a pair whose bound is under a threshold is under it without the ratio.

Pure: no I/O. numpy loads on the first exact ratio of long questions only.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SMALL_CELLS = 40_000
"""Below this many character pairs (|a|·|b|) difflib itself is quicker than numpy's set-up."""

MAX_CELLS = 40_000_000
"""Above this many character pairs the run-length array (2 bytes a pair: 80 MB) is not built;
difflib computes the ratio."""


def lcs_bound(a: str, b: str) -> float:
    """``2·LCS(a, b) / (len(a) + len(b))`` (1.0 for two empty strings): an upper bound of
    :func:`sequence_ratio`, exact for the longest common subsequence."""
    if not a and not b:
        return 1.0
    masks: dict[str, int] = {}
    for position, char in enumerate(b):
        masks[char] = masks.get(char, 0) | (1 << position)
    every = (1 << len(b)) - 1
    # Zero bits of v mark the columns where the LCS grew; the carries past len(b) are discarded
    # at the end (subtraction never borrows: u is a subset of v).
    v = every
    for char in a:
        u = v & masks.get(char, 0)
        v = (v + u) | (v - u)
    common = len(b) - (v & every).bit_count()
    return 2 * common / (len(a) + len(b))


def sequence_ratio(a: str, b: str) -> float:
    """Exactly ``difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()``; see the module
    docstring. Memory: 2 bytes per character pair, at most :data:`MAX_CELLS` pairs (difflib
    beyond that, and for short questions)."""
    cells = len(a) * len(b)
    if cells < SMALL_CELLS or cells > MAX_CELLS or max(len(a), len(b)) >= 1 << 16:
        return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    runs = _diagonal_runs(a, b)
    matched = 0
    queue = [(0, len(a), 0, len(b))]
    while queue:
        a_lo, a_hi, b_lo, b_hi = queue.pop()
        block = _longest_block(runs, a_lo, a_hi, b_lo, b_hi)
        if block is None:
            continue
        i, j, size = block
        matched += size
        if a_lo < i and b_lo < j:
            queue.append((a_lo, i, b_lo, j))
        if i + size < a_hi and j + size < b_hi:
            queue.append((i + size, a_hi, j + size, b_hi))
    return 2 * matched / (len(a) + len(b))


def _diagonal_runs(a: str, b: str) -> NDArray[np.uint16]:
    """``runs[i + 1, j + 1]``: how many characters match, ending at ``a[i]`` and ``b[j]``."""
    import numpy as np

    codes_a = np.frombuffer(a.encode("utf-32-le"), dtype=np.uint32)
    codes_b = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    equal = {code: codes_b == code for code in np.unique(codes_a).tolist()}
    runs = np.zeros((len(a) + 1, len(b) + 1), dtype=np.uint16)
    for i, code in enumerate(codes_a.tolist()):
        np.add(runs[i, :-1], 1, out=runs[i + 1, 1:], where=equal[code])
    return runs


def _longest_block(
    runs: NDArray[np.uint16], a_lo: int, a_hi: int, b_lo: int, b_hi: int
) -> tuple[int, int, int] | None:
    """difflib's ``find_longest_match(a_lo, a_hi, b_lo, b_hi)`` as (i, j, size), None for no
    match: the longest block inside the ranges, the earliest end in ``a`` then in ``b``."""
    import numpy as np

    if a_lo >= a_hi or b_lo >= b_hi:
        return None
    window = runs[a_lo + 1 : a_hi + 1, b_lo + 1 : b_hi + 1]
    if a_lo or b_lo:
        # A run that began before the window counts only from the window's edge.
        rows, cols = window.shape
        edge = np.minimum.outer(
            np.arange(1, rows + 1, dtype=np.uint16), np.arange(1, cols + 1, dtype=np.uint16)
        )
        window = np.minimum(window, edge)
    # argmax: the first maximum in row order, difflib's strict "longer than the best so far".
    row, col = divmod(int(window.argmax()), window.shape[1])
    size = int(window[row, col])
    if not size:
        return None
    return a_lo + row - size + 1, b_lo + col - size + 1, size
