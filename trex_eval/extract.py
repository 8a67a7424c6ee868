"""Completion -> Program: pull the solver program out of a model's answer. Pure (no I/O).

Extractors are registered by name (``extract(..., extractor=name)``): ``default``, ``raw`` (the
whole text is the program, for recorded outputs that already hold extracted code) and those of
the reproduced protocols.

``default``
    What a careful reader would run. Reasoning is never a source of code: ``<think>…</think>``
    (and ``<redacted_reasoning>…``) spans are removed from ``Completion.text`` first, an orphan
    closing tag (servers that strip the opening ``<think>``) removes everything before it, an
    unclosed opening tag removes everything after it, and ``Completion.reasoning`` is not read.
    In the remaining answer the candidates are fenced blocks tagged ``python``, ``py``,
    ``python3``, ``py3`` (any case) or untagged, and ``<python>…</python>`` tags without fences
    inside. The choice prefers the *final complete program* over drafts:

    0. a single closed, explicitly Python block is taken as it is (quality only matters to choose
       between blocks; if it does not parse, the sandbox reports ``syntax_error``);
    1. the last closed candidate that parses (``ast``) and contains an ``import`` -- a complete,
       self-contained program; else a block left open at the end of the output (truncated at
       ``max_tokens``) that parses and imports;
    2. else the last candidate that parses (a fragment: it will probably fail at run time),
       closed ones first;
    3. else the last closed block explicitly tagged as Python (it does not parse: the program
       then fails as ``syntax_error``, which says more than ``no_code``);
    4. with no candidate at all, the whole answer when it parses and imports something
       (raw code without fences).

    An unterminated block that does not parse and an untagged block that does not parse
    (printed output, LP text) are never chosen. Otherwise ``code`` is ``None`` and ``reason``
    says what was found instead.

    One exception reads reasoning: a :class:`~trex_eval.records.Completion` whose
    ``finish_reason`` is ``stop`` (the model ended its answer; nothing was cut off) but whose
    ``<think>`` is never closed and whose text outside it holds no program. Models prompted to
    use ``<think>`` tags sometimes forget the closing tag and write the final program inside;
    then the last complete (closed, parsing, importing) Python block after the unclosed tag is
    taken, and ``reason`` says so. With any other finish reason (``length``: truncated) the
    sample stays ``no_code``.

The protocols register their own extractors here too: ``trex-compat-solver`` and
``trex-compat-orgeval`` (:mod:`trex_eval.protocols.trex_compat.extract`).

All extractors read ``Completion.text`` only. A completion that carries an API ``error`` yields
``code=None``. ``Program.reason`` names the rule that fired, e.g.
``"last complete ```python fence after </think>"``.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from trex_eval.records import Completion, Program
from trex_eval.targets import Entry, Registry, takes_arguments

DEFAULT_EXTRACTOR = "default"

Extraction = tuple[str | None, str]
"""``(code, reason)`` returned by an extractor function; ``code`` is ``None`` when nothing usable."""


def extract(completion: Completion | str, *, extractor: str = DEFAULT_EXTRACTOR) -> Program:
    """Extract the program from ``completion`` with the named extractor.

    A plain string is treated as ``Completion.text``. An empty extraction (only whitespace) is
    reported as ``code=None``.

    Raises:
        ConfigError: ``extractor`` is not a registered name (see :data:`EXTRACTORS`).
    """
    function = extractor_function(extractor)
    if isinstance(completion, Completion):
        if completion.error is not None:
            return Program(code=None, extractor=extractor, reason=f"no completion: {completion.error}")
        text = completion.text
    else:
        text = completion
    code, reason = function(text)
    if (
        code is None
        and extractor == DEFAULT_EXTRACTOR
        and isinstance(completion, Completion)
        and completion.finish_reason == "stop"
    ):
        code, reason = _inside_unclosed_think(text) or (code, reason)
    if code is not None and not code.strip():
        return Program(code=None, extractor=extractor, reason=f"{reason} (empty)")
    return Program(code=code, extractor=extractor, reason=reason)


# --------------------------------------------------------------------------- default extractor

_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
_REASONING_TAG = re.compile(r"<(/?)(think|redacted_reasoning)>", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,})[ \t]*([^`\n]*)")
_PYTHON_TAG_BLOCK = re.compile(r"<python>(.*?)(</python>|\Z)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class _Block:
    """A code candidate in the answer text; ``start``/``end`` are character offsets.

    ``explicit`` is true when the block declares itself Python (a Python fence tag or a
    ``<python>`` tag), false for an untagged fence.
    """

    code: str
    label: str
    start: int
    end: int
    closed: bool
    explicit: bool


@dataclass(frozen=True)
class _Answer:
    """The answer text with reasoning removed, and what the removal saw."""

    text: str
    removed_reasoning: bool
    unclosed_reasoning: bool
    reasoning_text: str
    unclosed_text: str = ""


def _split_reasoning(text: str) -> _Answer:
    """Remove reasoning spans; a nested opening tag inside a span is part of the reasoning."""
    kept: list[str] = []
    dropped: list[str] = []
    position = 0
    inside = False
    removed = False
    for tag in _REASONING_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if not closing and not inside:
            kept.append(text[position : tag.start()])
            position = tag.end()
            inside = True
        elif closing and inside:
            dropped.append(text[position : tag.start()])
            position = tag.end()
            inside = False
            removed = True
        elif closing:
            # An orphan closing tag: the server stripped the opening one, so all before it was reasoning.
            dropped.extend(kept)
            dropped.append(text[position : tag.start()])
            kept = []
            position = tag.end()
            removed = True
    if inside:
        dropped.append(text[position:])
    else:
        kept.append(text[position:])
    return _Answer(
        text="".join(kept),
        removed_reasoning=removed or inside,
        unclosed_reasoning=inside,
        reasoning_text="".join(dropped),
        unclosed_text=text[position:] if inside else "",
    )


def _fenced_blocks(text: str) -> list[_Block]:
    """Python and untagged Markdown fenced blocks (three or more backticks); the last may be open.

    Fences of other languages (```bash, ```json, ```lp ...) are consumed, so that their closing
    lines pair correctly, but are not returned.
    """
    blocks: list[_Block] = []
    lines = text.splitlines(keepends=True)
    offset = 0
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.fullmatch(lines[index].rstrip("\n"))
        if opening is None:
            offset += len(lines[index])
            index += 1
            continue
        ticks = len(opening.group(1))
        info = opening.group(2).strip()
        tag = info.split()[0].lower() if info else ""
        start = offset
        offset += len(lines[index])
        index += 1
        body: list[str] = []
        closed = False
        while index < len(lines):
            line = lines[index]
            offset += len(line)
            index += 1
            stripped = line.strip()
            if len(stripped) >= ticks and set(stripped) == {"`"}:
                closed = True
                break
            body.append(line)
        if tag and tag not in _PYTHON_TAGS:
            continue
        blocks.append(
            _Block(
                code=textwrap.dedent("".join(body)),
                label=f"```{tag} fence" if tag else "untagged ``` fence",
                start=start,
                end=offset,
                closed=closed,
                explicit=bool(tag),
            )
        )
    return blocks


def _candidates(text: str) -> list[_Block]:
    fences = _fenced_blocks(text)
    tags = [
        _Block(
            code=textwrap.dedent(match.group(1)).strip("\n") + "\n",
            label="<python> tag",
            start=match.start(),
            end=match.end(),
            closed=bool(match.group(2)),
            explicit=True,
        )
        for match in _PYTHON_TAG_BLOCK.finditer(text)
    ]
    # A tag wrapping a fence is represented by the fence itself (the tag body holds backticks);
    # a tag inside a fence is part of that fence's code.
    tags = [tag for tag in tags if not any(f.start < tag.end and tag.start < f.end for f in fences)]
    return sorted(fences + tags, key=lambda block: block.start)


@dataclass(frozen=True)
class _Parsed:
    parses: bool
    imports: bool


def _inspect(code: str) -> _Parsed:
    try:
        # Programs often contain regex strings with invalid escapes; the warning is noise here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _Parsed(parses=False, imports=False)
    imports = any(isinstance(node, ast.Import | ast.ImportFrom) for node in ast.walk(tree))
    return _Parsed(parses=True, imports=imports)


_RANK_WORDING = (
    "last complete {label}",
    "unterminated (truncated output?) but complete {label}",
    "last {label} that parses but imports nothing",
    "unterminated {label} that parses but imports nothing",
    "last {label}, which does not parse",
)


def _rank(block: _Block, parsed: _Parsed) -> int | None:
    """Preference class of a candidate (lower is better; ``None``: never chosen), indexing
    ``_RANK_WORDING``. Closed blocks beat an unterminated one of the same quality."""
    if parsed.parses:
        quality = 0 if parsed.imports else 2
        return quality if block.closed else quality + 1
    if block.closed and block.explicit:
        return 4
    return None


def extract_default(text: str) -> Extraction:
    answer = _split_reasoning(text.replace("\r\n", "\n"))
    where = " after </think>" if answer.removed_reasoning else ""
    blocks = _candidates(answer.text)
    if len(blocks) == 1 and blocks[0].closed and blocks[0].explicit:
        # The only candidate is chosen whatever its quality, so it is not parsed here (parsing
        # costs ~0.2-4 ms per program); a syntax error is reported by the sandbox instead.
        return blocks[0].code, f"the only {blocks[0].label}{where}"
    best: tuple[int, _Block] | None = None
    # The last block of the best class wins: scanning from the end, a class-0 block ends the search.
    for block in reversed(blocks):
        rank = _rank(block, _inspect(block.code))
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, block)
            if rank == 0:
                break
    if best is not None:
        rank, chosen = best
        count = f" ({len(blocks)} code blocks in the answer)" if len(blocks) > 1 else ""
        return chosen.code, _RANK_WORDING[rank].format(label=chosen.label) + where + count
    if blocks:
        return None, f"no_code: the only code block{where} is unterminated and does not parse (truncated?)"

    whole = answer.text.strip()
    parsed = _inspect(whole)
    if whole and parsed.parses and parsed.imports:
        return whole + "\n", f"whole answer{where} is a Python program (no fences)"
    if answer.unclosed_reasoning:
        return None, "no_code: <think> is never closed (output truncated inside the reasoning?)"
    if _candidates(answer.reasoning_text):
        return None, "no_code: code appears only inside <think> reasoning, which is never run"
    return None, f"no_code: no Python block or program in the answer{where}"


def _inside_unclosed_think(text: str) -> Extraction | None:
    """The last complete Python program after an unclosed ``<think>`` (see the module docstring),
    or ``None`` when the reasoning is closed or holds no such block."""
    answer = _split_reasoning(text.replace("\r\n", "\n"))
    if not answer.unclosed_reasoning:
        return None
    for block in reversed(_candidates(answer.unclosed_text)):
        if block.closed and _rank(block, _inspect(block.code)) == 0:
            return block.code, (
                f"last complete {block.label} inside a <think> that is never closed "
                "(finish_reason stop: the model ended without closing its reasoning)"
            )
    return None


# --------------------------------------------------------------------------- raw


def extract_raw(text: str) -> Extraction:
    """The whole text is the program (recorded outputs that already hold extracted code)."""
    return text, "raw: the whole text is the program"


# --------------------------------------------------------------------------- registry

Extractor = Callable[[str], Extraction]
"""An extractor: a function of the completion text."""


def _as_extractor(value: object) -> Extractor | None:
    return cast(Extractor, value) if takes_arguments(value, 1) else None


EXTRACTORS: Registry[Extractor] = Registry(
    "extractor",
    (
        Entry(DEFAULT_EXTRACTOR, "trex_eval.extract:extract_default"),
        Entry("raw", "trex_eval.extract:extract_raw"),
        Entry("trex-compat-solver", "trex_eval.protocols.trex_compat.extract:extract_solver"),
        Entry("trex-compat-orgeval", "trex_eval.protocols.trex_compat.extract:extract_orgeval"),
        Entry("orlm-first-python", "trex_eval.protocols.orlm.extract:extract_first_python"),
    ),
    accept=_as_extractor,
    expects="a function of the completion text returning (code, reason)",
)
"""Extractor name -> ``"module:function"`` of an :data:`Extractor`, returning an
:data:`Extraction`; imported on first use. Iterating it lists the names."""


def extractor_function(name: str) -> Extractor:
    """The function registered as ``name``.

    Raises:
        ConfigError: ``name`` is not a registered extractor (with the close matches), or its
            target is not a function of one argument.
    """
    return EXTRACTORS.get(name)
