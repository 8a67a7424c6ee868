"""Index keys for ``addVars``/``addConstrs`` and the names built from them.

``addVars(*indices)``: each index is an int ``n`` (meaning ``range(n)``) or an iterable whose
members are scalars or tuples; the keys are the cartesian product with tuples flattened, and a
one-part key is the bare value (``x[3]``, ``x[1,'a']``). Names are ``name[part,part,...]``
using ``str`` of each part.

``addConstrs(generator)``: the key of each constraint is the current value of the generator's
own loop variables, in the order the loops bind them, read from the suspended generator frame
after each yield — exactly what gurobipy does. The binding order comes from the generator's
bytecode, because loop variables that an inner expression closes over are cell variables and
are missing from ``co_varnames``.
"""

from __future__ import annotations

import dis
import itertools
from collections.abc import Iterable
from types import CodeType, GeneratorType
from typing import Any

_STORES = {"STORE_FAST": 1, "STORE_DEREF": 1, "STORE_FAST_STORE_FAST": 2, "STORE_FAST_LOAD_FAST": 1}


def index_keys(indices: tuple[object, ...]) -> list[Any]:
    """The keys ``addVars(*indices)`` creates, in creation order."""
    axes: list[list[tuple[object, ...]]] = []
    for index in indices:
        if isinstance(index, int) and not isinstance(index, bool):
            axes.append([(k,) for k in range(index)])
        elif isinstance(index, Iterable) and not isinstance(index, (str, bytes)):
            axes.append([member if isinstance(member, tuple) else (member,) for member in index])
        else:
            raise TypeError(f"addVars index must be an int or an iterable, not {type(index).__name__}")
    keys: list[Any] = []
    for combination in itertools.product(*axes):
        flat = tuple(part for piece in combination for part in piece)
        keys.append(flat[0] if len(flat) == 1 else flat)
    return keys


def key_name(prefix: str, key: object) -> str:
    """``prefix[key parts]`` as gurobipy names indexed variables and constraints."""
    parts = key if isinstance(key, tuple) else (key,)
    return f"{prefix}[{','.join(str(part) for part in parts)}]"


def loop_variables(code: CodeType) -> list[str]:
    """Names a generator expression binds, in binding order (its hidden iterator excluded)."""
    names: list[str] = []
    for instruction in dis.get_instructions(code):
        count = _STORES.get(instruction.opname)
        if count is None:
            continue
        targets = instruction.argval if isinstance(instruction.argval, tuple) else (instruction.argval,)
        for target in targets[:count]:
            if target != ".0" and target not in names:
                names.append(target)
    return names


def generator_keys(generator: GeneratorType[Any, None, None]) -> Iterable[tuple[Any, Any]]:
    """Pairs ``(key, yielded value)`` of an ``addConstrs`` generator expression."""
    loop_names = loop_variables(generator.gi_code)
    for value in generator:
        frame = generator.gi_frame
        scope = frame.f_locals if frame is not None else {}
        parts = tuple(scope[name] for name in loop_names if name in scope)
        yield (parts[0] if len(parts) == 1 else parts), value
