"""The one policy for text that the harness did not write: what a stored record may hold.

A program's output (stdout and stderr tails, exception messages, the names of its files,
variables, classes and model rows, its result-channel records, the model files it wrote) and a
model's completion are adversarial input. Every record field that can hold such text is typed
here, so that each way of building a record (the sandbox's reply, a re-read run directory, a
test) applies the same rules:

* **Lone surrogates** (``U+D800``-``U+DFFF`` standing alone, as ``surrogateescape`` makes of
  undecodable bytes and a JSON ``"\\udcff"`` escape decodes to) become ``U+FFFD``, one per code
  unit. They cannot be written as UTF-8: one of them used to stop a run at its store.
* **C0 control characters** other than ``\\t``, ``\\n`` and ``\\r`` (``U+0000``-``U+001F``;
  NUL included) become ``U+FFFD`` in program output (:data:`Text`, :data:`Name`). JSON spells
  each of them as a six-byte ``\\u0001``; ``U+FFFD`` takes three bytes, like the undecodable
  bytes that already decode to it, so no character of cleaned text takes more than three bytes
  in a stored line (the record budget, :mod:`trex_eval.budget`, counts those encoded bytes).
  ``DEL`` and C1 controls are left alone: JSON writes them as they are (one and two bytes).
* **Lengths**: names (:data:`Name`: variables, rows, classes, files, libraries, exception types,
  statuses) are cut to :data:`NAME_CHARS`, keeping both ends (a file name keeps its extension,
  a variable name its index); messages are cut where they are composed
  (:data:`MESSAGE_CHARS`, the sandbox outcome); tails and file contents are cut by their own
  limits (``SandboxLimits.tail_chars``, the record budget).

A model's own text (:data:`Unicode`: completions, prompts, extracted code) only loses its lone
surrogates: its control characters are the program's (a form feed is whitespace in Python).

Every replacement maps one character to one character, so cutting and cleaning commute. Cleaned
text survives the store unchanged: written, read back, equal. Pure; imports nothing from
trex_eval.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"
"""What a lone surrogate or a C0 control character becomes."""

NAME_CHARS = 200
"""Longest name kept (a variable, row, class, file, library or exception type name)."""

MESSAGE_CHARS = 2000
"""Longest composed message kept (``Execution.detail`` as the sandbox outcome builds it)."""

_CUT_MARK = "\u2026"
_SURROGATES = range(0xD800, 0xE000)
_CONTROLS = [code for code in range(0x20) if chr(code) not in "\t\n\r"]
_UNICODE_TABLE = dict.fromkeys(_SURROGATES, REPLACEMENT)
_TEXT_TABLE = {**_UNICODE_TABLE, **dict.fromkeys(_CONTROLS, REPLACEMENT)}
# A search finds the rare text that needs the table; translating clean text would copy it.
_UNICODE_UNSAFE = re.compile("[\ud800-\udfff]")
_TEXT_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
# The only characters of cleaned text that JSON escapes (two bytes each).
_ESCAPED = (b'"', b"\\", b"\n", b"\r", b"\t")


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate replaced by :data:`REPLACEMENT` (a model's text)."""
    if text.isascii() or _UNICODE_UNSAFE.search(text) is None:
        return text
    return text.translate(_UNICODE_TABLE)


def clean(text: str) -> str:
    """``text`` with each lone surrogate and C0 control but tab, newline and carriage return
    replaced by :data:`REPLACEMENT` (program output); same length."""
    if _TEXT_UNSAFE.search(text) is None:
        return text
    return text.translate(_TEXT_TABLE)


def clean_name(name: str) -> str:
    """:func:`clean`, cut to :data:`NAME_CHARS` from the middle (both ends kept, ``…`` between)."""
    name = clean(name)
    if len(name) <= NAME_CHARS:
        return name
    head = (NAME_CHARS - 1) // 2
    return name[:head] + _CUT_MARK + name[len(name) - (NAME_CHARS - 1 - head) :]


def clean_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`clean_name` of each name; the tuple itself when none needs it (one scan, not one
    call per name: a matrix can name a million columns)."""
    joined = "".join(names)
    if _TEXT_UNSAFE.search(joined) is None and all(len(name) <= NAME_CHARS for name in names):
        return names
    return tuple(clean_name(name) for name in names)


def clip(text: str, chars: int) -> str:
    """:func:`clean` ``text``, its first ``chars`` characters."""
    return clean(text[:chars])


def json_bytes(text: str) -> int:
    """Bytes ``text`` takes inside a JSON string of a stored line (the quotes not counted)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2


def cut_to_bytes(text: str, max_bytes: int, *, keep: str = "head") -> str:
    """The longest start (``keep="head"``) or end (``"tail"``) of cleaned ``text`` that takes at
    most ``max_bytes`` in a JSON line."""
    data = text.encode("utf-8")
    if keep == "tail":
        data = data[::-1]
    # A byte of cleaned text takes one or two bytes in JSON (two: the escaped ones), so the first
    # max_bytes // 2 always fit; the longest prefix that fits is searched between the two bounds,
    # counting each byte's escapes once.
    low, high = min(len(data), max(0, max_bytes) // 2), min(len(data), max(0, max_bytes))
    escapes = _escapes(data[:low])
    while low < high:
        middle = (low + high + 1) // 2
        more = escapes + _escapes(data[low:middle])
        if middle + more <= max_bytes:
            low, escapes = middle, more
        else:
            high = middle - 1
    kept = data[:low]
    if keep == "tail":
        kept = kept[::-1]
    # A cut through a multi-byte character leaves a partial one at the cut: dropped.
    return kept.decode("utf-8", "ignore")


def _escapes(chunk: bytes) -> int:
    return sum(chunk.count(char) for char in _ESCAPED)


def clean_tree(value: object) -> object:
    """JSON-decoded ``value`` with :func:`clean` applied to every string in it (keys included):
    how the store reads a line that another writer left with lone-surrogate escapes."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [clean_tree(item) for item in value]
    if isinstance(value, dict):
        return {clean(str(key)): clean_tree(item) for key, item in value.items()}
    return value


Unicode = Annotated[str, AfterValidator(valid_unicode)]
"""A model's text (completion, reasoning, extracted code, prompt messages): lone surrogates replaced."""

Text = Annotated[str, AfterValidator(clean)]
"""Program output of any length (tails, file contents, messages built from it): cleaned."""

Name = Annotated[str, AfterValidator(clean_name)]
"""A name a program chose (variable, row, class, file, library label, exception type, status):
cleaned and cut to :data:`NAME_CHARS`."""

Names = Annotated[tuple[str, ...], AfterValidator(clean_names)]
"""The column or row names of a captured matrix: each one a :data:`Name`."""
