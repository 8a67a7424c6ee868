"""The reference harness's extractors (reference-harness §3.1, §3.2), quirks included. Pure.

``trex-compat-solver``
    For NL4OPT, OptiBench and B4O-Feasible (§3.1): the *longest* ```` ```python ```` block
    anywhere wins (drafts inside ``<think>`` included); otherwise the longest of any fence, so a
    ```` ```py ```` block keeps its ``py`` tag as the first line of code.

``trex-compat-orgeval``
    The ORGEval extractor (§3.2): the text after the last ``</think>`` is searched before the
    whole response; applied twice, as the reference does.

In both a rule fires as soon as its regex matches at all (so an empty fence yields empty code,
reported as ``code=None``), "longest" compares match lengths before stripping, and the first of
equally long matches wins. Registered in :data:`trex_eval.extract.EXTRACTORS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from trex_eval.extract import Extraction

# Regexes as the reference harness writes them (reference-harness §3.1, §3.2). ``findall`` with
# non-greedy bodies pairs each opening fence with the next ``` anywhere, tag line included.

_PYTHON_FENCE = re.compile(r"```python\s*(.*?)```", re.DOTALL)
_ANY_FENCE = re.compile(r"```\s*(.*?)```", re.DOTALL)
_PYTHON_TAG = re.compile(r"<python>\s*(.*?)\s*</python>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</think>|</redacted_reasoning>", re.IGNORECASE)
_MIN_FENCE_CHARS = 50


def _longest(matches: Sequence[str]) -> str:
    """The longest match, first among equals (``max`` semantics), measured before stripping."""
    return max(matches, key=len)


def _fenced(text: str) -> tuple[str, str] | None:
    """§3.1 inner preference: longest ```python block, else longest ``` block over 50 stripped chars."""
    python = _PYTHON_FENCE.findall(text)
    if python:
        return _longest(python).strip(), "longest ```python fence"
    long_fences = [m for m in _ANY_FENCE.findall(text) if len(m.strip()) > _MIN_FENCE_CHARS]
    if long_fences:
        return _longest(long_fences).strip(), "longest ``` fence over 50 chars"
    return None


def extract_solver(text: str) -> Extraction:
    """Reference-harness §3.1 (``lp_utils.extract_python_code``): first rule with a match wins."""
    python = _PYTHON_FENCE.findall(text)
    if python:
        return _longest(python).strip(), f"§3.1 rule 1: longest of {len(python)} ```python fences"
    fences = _ANY_FENCE.findall(text)
    if fences:
        long_fences = [m for m in fences if len(m.strip()) > _MIN_FENCE_CHARS]
        pool = long_fences or fences
        qualifier = "over 50 chars" if long_fences else "(none over 50 chars)"
        return _longest(pool).strip(), f"§3.1 rule 2: longest of {len(pool)} ``` fences {qualifier}"
    tags = _PYTHON_TAG.findall(text)
    if tags:
        body = _longest(tags)
        inner = _fenced(body)
        if inner is not None:
            return inner[0], f"§3.1 rule 3: {inner[1]} inside the longest <python> tag"
        return body, "§3.1 rule 3: body of the longest <python> tag"
    pieces = _THINK_END.split(text)
    if len(pieces) > 1:
        after = pieces[-1]
        inner = _fenced(after)
        if inner is not None:
            return inner[0], f"§3.1 rule 4: {inner[1]} after the last </think>"
        if after.strip():
            return after.strip(), "§3.1 rule 4: text after the last </think>"
    # Rule 5 (blocks inside <think>) cannot fire: rules 1-2 already searched the whole text.
    return text, "§3.1 rule 6: whole response"


def _orgeval_once(text: str) -> Extraction:
    pieces = _THINK_END.split(text)
    has_marker = len(pieces) > 1
    after = pieces[-1].strip() if has_marker else text
    for pattern, kind in ((_PYTHON_FENCE, "```python"), (_ANY_FENCE, "```")):
        for content, where in ((after, "after </think>"), (text, "in the whole response")):
            matches = pattern.findall(content)
            if matches:
                return _longest(matches).strip(), f"§3.2: longest {kind} fence {where}"
    if has_marker and after:
        return after, "§3.2: text after the last </think>"
    return text, "§3.2: whole response"


def extract_orgeval(text: str) -> Extraction:
    """Reference-harness §3.2 (``_lp_utils.extract_python_code``), applied twice like the reference
    (once when evaluating the completion, again when converting the code to an LP file)."""
    first, reason = _orgeval_once(text)
    second, second_reason = _orgeval_once(first or "")
    if second != first:
        reason = f"{reason}, then on the second pass {second_reason.removeprefix('§3.2: ')}"
    return second, reason
