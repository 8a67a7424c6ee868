"""ORLM's extractor (``orlm-first-python``), quirks included. Pure.

Cardinal-Operations/ORLM@38712c9 eval/execute.py (``main``): the program is the text between the
*first* ```` ```python ```` and the next ```` ``` ```` after it::

    start = output.find("```python")
    end = output.find("```", start + 9)
    script = output[start:end].replace("```python", "")

so a draft block before the final one wins, ```` ```py ```` or a bare ```` ``` ```` fence is "No
code", an unclosed fence loses the completion's last character (``end == -1``), and the code is
not stripped. A completion without ```` ```python ````, or whose block is blank, is "Execution
Failed: No code" (``code=None`` here). Registered in :data:`trex_eval.extract.EXTRACTORS`.
"""

from __future__ import annotations

from trex_eval.extract import Extraction

FENCE = "```python"
_SOURCE = "ORLM eval/execute.py"


def extract_first_python(text: str) -> Extraction:
    """The first ```` ```python ```` block, exactly as ORLM's ``eval/execute.py`` slices it."""
    start = text.find(FENCE)
    if start == -1:
        return None, f"{_SOURCE}: no ```python fence (Execution Failed: No code)"
    end = text.find("```", start + 9)
    script = text[start:end].replace(FENCE, "")
    if script.strip() == "":
        return None, f"{_SOURCE}: the first ```python block is empty (Execution Failed: No code)"
    blocks = text.count(FENCE)
    which = "the only" if blocks == 1 else f"the first of {blocks}"
    closed = "" if end != -1 else ", unclosed (its last character dropped, as upstream)"
    return script, f"{_SOURCE}: {which} ```python block{closed}"
