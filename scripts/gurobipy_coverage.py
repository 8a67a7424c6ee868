"""Which gurobipy names do real programs use, and which does gurobipy_highs support?

Scans programs with ``ast`` — the benchmarks' reference programs (from the data directory) and
the extracted programs of stored runs (``samples.jsonl`` files, field ``program.code``) — and
counts every gurobipy name they use: module functions and classes, methods, attributes,
parameters and ``GRB`` constants. Prints a Markdown report (used vs supported); with
``--update-doc`` it replaces the report section of ``docs/gurobipy-highs.md``.

Usage::

    python scripts/gurobipy_coverage.py [--data-dir DIR] [--update-doc FILE] [samples.jsonl ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import gurobipy_highs as layer  # noqa: E402
from gurobipy_highs import _attrs, _facts, _params  # noqa: E402

BEGIN = "<!-- coverage:begin -->"
END = "<!-- coverage:end -->"
BENCHMARK_FILES = ("data/bench4opt_feasible/test.jsonl", "data/bench4opt/test.jsonl")
_GRB_GROUPS = {"Status", "status", "Attr", "attr", "Param", "param", "Callback", "callback", "Error", "error"}
_LAYER_CLASSES = (
    layer.Model,
    layer.Var,
    layer.LinExpr,
    layer.QuadExpr,
    layer.Constr,
    layer.QConstr,
    layer.Env,
    layer.tupledict,
    layer.tuplelist,
)
_ATTRIBUTES = {name.lower(): name for name in _facts.GRB_ATTR.values()}
_PARAMETERS = {name.lower(): name for name in _facts.PARAMS}
_METHODS = set().union(
    *(_facts.CLASS_NAMES[c] for c in _facts.CLASS_NAMES if c not in ("tupledict", "tuplelist"))
)
_METHODS |= _facts.CLASS_NAMES["tupledict"] | _facts.CLASS_NAMES["tuplelist"]
_SUPPORTED_ATTRIBUTES = (
    set(_attrs.MODEL_SUPPORTED)
    | set(_attrs.VAR_STORED)
    | _attrs.VAR_SOLUTION
    | set(_attrs.CONSTR_STORED)
    | _attrs.CONSTR_SOLUTION
    | set(_attrs.QCONSTR_STORED)
    | set(_attrs.GENCONSTR_STORED)
    | {name for names in _attrs.IIS_BY_KIND.values() for name in names}
)


@dataclass
class Usage:
    """Occurrences of gurobipy names, per category (``module``, ``method``, ``attribute``,
    ``parameter``, ``constant``): name -> count, and name -> set of program ids."""

    counts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    programs: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set))
    )
    scanned: int = 0
    unparsable: int = 0

    def add(self, category: str, name: str, program: str) -> None:
        self.counts[category][name] += 1
        self.programs[category][name].add(program)


class _Scanner(ast.NodeVisitor):
    """Collects the gurobipy names one program uses."""

    def __init__(self, usage: Usage, program: str) -> None:
        self.usage = usage
        self.program = program
        self.modules: set[str] = set()
        self.grb: set[str] = set()
        self.calls: set[int] = set()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "gurobipy":
                self.modules.add(alias.asname or "gurobipy")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module != "gurobipy":
            return
        for alias in node.names:
            if alias.name == "GRB":
                self.grb.add(alias.asname or "GRB")
            if alias.name != "*":
                self.usage.add("module", alias.name, self.program)

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.add(id(node.func))
        if isinstance(node.func, ast.Attribute) and node.args and isinstance(node.args[0], ast.Constant):
            first = node.args[0].value
            if isinstance(first, str):
                if node.func.attr in ("setParam", "getParamInfo") and first.lower() in _PARAMETERS:
                    self.usage.add("parameter", _PARAMETERS[first.lower()], self.program)
                elif node.func.attr in ("getAttr", "setAttr") and first.lower() in _ATTRIBUTES:
                    self.usage.add("attribute", _ATTRIBUTES[first.lower()], self.program)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if isinstance(value, ast.Name) and value.id in self.modules:
            if node.attr == "GRB":
                self.generic_visit(node)
                return
            self.usage.add("module", node.attr, self.program)
        elif self._is_grb(value):
            if node.attr not in _GRB_GROUPS:
                self.usage.add("constant", f"GRB.{node.attr}", self.program)
        elif isinstance(value, ast.Attribute) and self._is_grb(value.value) and value.attr in _GRB_GROUPS:
            group = value.attr.capitalize()
            if group == "Attr":
                self.usage.add("attribute", _ATTRIBUTES.get(node.attr.lower(), node.attr), self.program)
            elif group == "Param":
                self.usage.add("parameter", _PARAMETERS.get(node.attr.lower(), node.attr), self.program)
            else:
                self.usage.add("constant", f"GRB.{group}.{node.attr}", self.program)
        elif isinstance(value, ast.Attribute) and value.attr in ("Params", "params"):
            self.usage.add("parameter", _PARAMETERS.get(node.attr.lower(), node.attr), self.program)
        elif id(node) in self.calls and node.attr in _METHODS:
            self.usage.add("method", node.attr, self.program)
        elif id(node) not in self.calls and node.attr.lower() in _ATTRIBUTES:
            self.usage.add("attribute", _ATTRIBUTES[node.attr.lower()], self.program)
        self.generic_visit(node)

    def _is_grb(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.grb
        return isinstance(node, ast.Attribute) and node.attr == "GRB"


def scan(programs: Iterator[tuple[str, str]]) -> Usage:
    """Usage of gurobipy names over ``(program id, source)`` pairs; programs that do not import
    gurobipy are skipped, programs that do not parse are counted as unparsable."""
    usage = Usage()
    for program, code in programs:
        if "gurobipy" not in code:
            continue
        usage.scanned += 1
        try:
            tree = ast.parse(code)
        except SyntaxError:
            usage.unparsable += 1
            continue
        _Scanner(usage, program).visit(tree)
    return usage


def benchmark_programs(data_dir: Path) -> Iterator[tuple[str, str]]:
    for relative in BENCHMARK_FILES:
        path = data_dir / relative
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                yield f"{relative}:{row['id']}", row["reference_code"]


def run_programs(paths: list[Path]) -> Iterator[tuple[str, str]]:
    """Extracted programs of stored runs (torn last lines are skipped)."""
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines()):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            code = (record.get("program") or {}).get("code")
            if code:
                yield f"{path}:{number}", code


def support(category: str, name: str) -> str:
    """The layer's support for one used name, as a short phrase."""
    if category == "module":
        if name in vars(layer) and not name.startswith("_"):
            return "yes"
        return "NotImplementedError" if name in _facts.MODULE_NAMES else "not gurobipy"
    if category == "method":
        if any(name in vars(base) for cls in _LAYER_CLASSES for base in cls.__mro__ if base is not object):
            return "yes"
        return "NotImplementedError"
    if category == "attribute":
        if name in _SUPPORTED_ATTRIBUTES:
            return "yes"
        return "NotImplementedError" if name in _ATTRIBUTES.values() else "not gurobipy"
    if category == "parameter":
        if name not in _facts.PARAMS:
            return "unknown parameter (GurobiError, as gurobipy)"
        if name in _params.HIGHS_OPTIONS:
            return f"yes (HiGHS `{_params.HIGHS_OPTIONS[name]}`)"
        if name in _params.SOLVE_RULES:
            return f"yes ({_params.SOLVE_RULES[name]})"
        if name in ("OutputFlag", "LogToConsole", "LogFile", "Presolve", "Method"):
            return "yes"
        return "accepted, no effect (tunes Gurobi's own algorithm)"
    if category == "constant":
        group, _, rest = name.partition(".")[2].partition(".")
        table = {"Status": _facts.GRB_STATUS, "Callback": _facts.GRB_CALLBACK, "Error": _facts.GRB_ERROR}
        known = rest in table.get(group, {}) if rest else group in _facts.GRB_CONSTANTS
        return "yes (real value)" if known else "not gurobipy"
    raise ValueError(category)


_TITLES = {
    "module": "Module functions and classes (`gp.X`, `from gurobipy import X`)",
    "method": "Methods",
    "attribute": "Attributes (`obj.X`, `getAttr('X')`, `GRB.Attr.X`)",
    "parameter": "Parameters",
    "constant": "`GRB` constants",
}


def report(usage: Usage, sources: list[str]) -> str:
    """The Markdown report: one table per category, most used first."""
    lines = [
        f"Scanned {usage.scanned} programs that import gurobipy ({', '.join(sources)}); "
        f"{usage.unparsable} did not parse.",
        "",
    ]
    unsupported: set[str] = set()
    for category, title in _TITLES.items():
        counts = usage.counts.get(category)
        if not counts:
            continue
        lines += [f"#### {title}", "", "| name | uses | programs | supported |", "|---|---:|---:|---|"]
        for name, uses in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            verdict = support(category, name)
            if not verdict.startswith(("yes", "accepted")):
                unsupported |= usage.programs[category][name]
            lines.append(f"| `{name}` | {uses} | {len(usage.programs[category][name])} | {verdict} |")
        lines.append("")
    clean = usage.scanned - usage.unparsable - len(unsupported)
    lines.append(f"Programs using only supported names: {clean} of {usage.scanned - usage.unparsable}.")
    return "\n".join(lines) + "\n"


def update_doc(path: Path, text: str) -> None:
    """Replace the text between the coverage markers of ``path``."""
    document = path.read_text()
    start, end = document.index(BEGIN) + len(BEGIN), document.index(END)
    path.write_text(document[:start] + "\n" + text + document[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", nargs="*", type=Path, help="samples.jsonl files of stored runs")
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "benchmarks" / "t-rex")
    parser.add_argument("--update-doc", type=Path, help="Markdown file whose coverage section to replace")
    args = parser.parse_args(argv)

    def programs() -> Iterator[tuple[str, str]]:
        yield from benchmark_programs(args.data_dir)
        yield from run_programs(args.samples)

    sources = ["B4O reference programs", *(str(p) for p in args.samples)]
    text = report(scan(programs()), sources)
    if args.update_doc:
        update_doc(args.update_doc, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
