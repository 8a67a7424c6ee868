"""The model a program's LP or MPS file holds, read once per file by the harness's own reader in
a verifier process under a CPU budget (:meth:`~.lanes.VerifierLanes.read_model`).

The file is the program's output: its reading is work the harness does on the sample's behalf,
so it is bounded like a re-solve (CPU seconds of a process doing nothing else, which load does
not use up) and kept out of the harness process. A grade and its diagnosis read the same file:
the last few readings are remembered by the text's digest, so a file is read once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Literal

from ..errors import GradingError
from ..records import LinearModel
from .base import OutOfTime, Unsolvable
from .lanes import ModelFileRefused, verifier_lanes

REMEMBERED_FILES = 4
"""Readings kept (a grade and its diagnosis come close together; a model read from a large file
can hold hundreds of MiB of Python objects, so few are kept)."""

REMEMBERED_MAX_ENTRIES = 200_000
"""Variables + nonzeros + quadratic parts of the largest model remembered (read again otherwise:
a model at the caps holds hundreds of MiB of Python objects)."""

_LOCK = threading.Lock()
_READ: OrderedDict[tuple[bytes, float], LinearModel | Exception] = OrderedDict()


def read_model_file(text: str, *, name: str, budget_s: float) -> LinearModel:
    """The model in ``text``, an LP file or, where ``name`` ends in ``.mps``, an MPS file, read
    within ``budget_s`` CPU seconds; a file read before under the same budget is not read again
    (its failure neither).

    Raises:
        GradingError: ``text`` is not a readable model (the reader's message).
        ModelFileRefused: it is over the size caps, or could not be read within ``budget_s``.
    """
    kind: Literal["lp", "mps"] = "mps" if name.lower().endswith(".mps") else "lp"
    key = (hashlib.sha256(kind.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).digest(), budget_s)
    with _LOCK:
        found = _READ.get(key)
        if found is not None:
            _READ.move_to_end(key)
    if found is None:
        try:
            found = verifier_lanes().read_model(text, kind=kind, budget_s=budget_s)
        except OutOfTime as error:
            found = ModelFileRefused(f"it could not be read within its budget: {error}")
        except GradingError as error:  # the reader's word on the text (or over the size caps)
            found = error
        except Unsolvable as error:  # the verifier's failure, not the file's: neither a verdict
            raise ModelFileRefused(f"the harness could not read it: {error}") from None  # nor kept
        if isinstance(found, Exception) or _entries(found) <= REMEMBERED_MAX_ENTRIES:
            with _LOCK:
                _READ[key] = found
                while len(_READ) > REMEMBERED_FILES:
                    _READ.popitem(last=False)
    if isinstance(found, Exception):
        raise found
    return found


def _entries(model: LinearModel) -> int:
    return len(model.var_names) + len(model.a_val) + len(model.q_obj) + len(model.q_constraints)
