"""The reference harness's rewrites of extracted code before running it, reproduced as pure
string functions (quirks included, because published T-Rex numbers depend on them).

* :func:`orgeval_rewrite` is the ORGEval pipeline (``evaluate/_lp_utils.py::process_code_for_lp``
  with ``insert_lb_if_missing`` and ``ensure_imports``).
* :func:`solver_rewrite` is the solver targets' preparation (NL4OPT, OptiBench, B4O-Feasible:
  ``data.json`` substitution plus ``add_gurobi_imports``); embedding the result in the wrapper
  script is the sandbox's business.

None of these functions parses Python: they are regular-expression and substring edits, with no
word boundaries, exactly like the originals (``mymodel.write(...)`` is rewritten,
``opt_model.addVars`` makes the guessed model variable ``model``). The reference also prints the
data and LP paths to stdout; that side effect is not reproduced.
"""

from __future__ import annotations

import re

_WRITE_CALL = re.compile(r"((?:model|m)\.write\()([^)]*)(\))")
_HAS_WRITE = re.compile(r"(?:model|m)\.write\(")
_ADD_VARS = re.compile(r"(model|m)\.addVars\(")
_ADD_VAR = re.compile(r"(model|m)\.addVar\(")
_ADD_VARS_WITHOUT_COMMENT = re.compile(r"(model\.addVars\([^)]*)\)\n")
_FREE_LOWER_BOUND = "lb=-GRB.INFINITY"


def orgeval_rewrite(code: str, *, data_path: str, lp_path: str, insert_lb: bool = True) -> str:
    """Rewrite extracted code the way the reference ORGEval runner does before executing it.

    Steps, in order: every literal ``data.json`` becomes ``data_path`` (comments and longer names
    included); every ``model.write(...)``/``m.write(...)`` (argument without ``)``) becomes a
    write of ``'<lp_path>'``; if there was no such call, ``<var>.write('<lp_path>')`` is appended
    on its own line, ``<var>`` being the first ``model``/``m`` before ``.addVars(``, else before
    ``.addVar(``, else ``model``; ``from gurobipy import GRB`` is prepended; then
    :func:`insert_lb_if_missing` and :func:`ensure_imports`. ``insert_lb=False`` skips only the
    lower-bound rewrite: a switch the reference harness does not have, which measures what the
    rewrite costs (golden fact G9: 234/394 with it, 384/394 without).

    ``data_path`` and ``lp_path`` are inserted verbatim (the reference uses paths relative to its
    working directory, e.g. ``data/bench4opt/lp_data/data_7_problem7.json``).
    """
    code = code.replace("data.json", data_path)
    code = _WRITE_CALL.sub(lambda match: f"{match.group(1)}'{lp_path}'{match.group(3)}", code)
    if not _HAS_WRITE.search(code):
        code += f"\n{_guess_model_variable(code)}.write('{lp_path}')"
    code = "from gurobipy import GRB\n" + code
    if insert_lb:
        code = insert_lb_if_missing(code)
    return ensure_imports(code)


def _guess_model_variable(code: str) -> str:
    for pattern in (_ADD_VARS, _ADD_VAR):
        match = pattern.search(code)
        if match:
            return match.group(1)
    return "model"


def insert_lb_if_missing(code: str) -> str:
    """Make ``model.addVars`` variables free, as the reference does to generated code only.

    For every match of ``(model\\.addVars\\([^)]*)\\)\\n`` (a call on a name ending in ``model``,
    no ``)`` inside the arguments, the closing ``)`` directly followed by a newline) whose text
    does not contain ``lb=``, ``, lb=-GRB.INFINITY`` is inserted before the ``)``, or
    `` lb=-GRB.INFINITY`` when the arguments already end with a comma (trailing whitespace
    ignored). Calls on ``m.``, ``addVar(`` calls, calls followed by a comment and calls with
    nested parentheses are left alone; ``lb = 0`` (with spaces) is not recognised and gets a
    second ``lb``.
    """

    def add_lower_bound(match: re.Match[str]) -> str:
        call = match.group(1)
        if "lb=" in call:
            return match.group(0)
        separator = " " if call.rstrip().endswith(",") else ", "
        return f"{call}{separator}{_FREE_LOWER_BOUND})\n"

    return _ADD_VARS_WITHOUT_COMMENT.sub(add_lower_bound, code)


def ensure_imports(code: str) -> str:
    """Prepend ``import gurobipy as gp`` unless the text contains ``import gurobipy``, then
    ``import json`` unless it contains ``import json`` or ``from json`` (substring tests, so a
    comment counts)."""
    if "import gurobipy" not in code:
        code = "import gurobipy as gp\n" + code
    if "import json" not in code and "from json" not in code:
        code = "import json\n" + code
    return code


def solver_rewrite(code: str, *, data_json_path: str | None) -> str:
    """Prepare code for the solver targets as the reference does.

    When ``data_json_path`` is given (the reference writes the instance data there and passes its
    absolute path), every literal ``data.json`` in the code becomes that path; then the same
    import rule as :func:`ensure_imports` applies (``add_gurobi_imports`` in the reference).
    ``None`` leaves ``data.json`` untouched, as the reference does when it has no data.
    """
    if data_json_path:
        code = code.replace("data.json", data_json_path)
    return ensure_imports(code)
