"""The one registry shape of every extension seam, over ``"module:attribute"`` targets.

Backends, protocols, extractors, grading rules and reward policies are each a :class:`Registry`:
a list of :class:`Entry` lines that name their implementation by target, so that listing the
names (``--help``, error hints) imports nothing and an implementation's dependencies load only
when it is first used. What a registry holds is declared (``accept``) and checked when an entry
loads; a versioned kind's entries carry the version they implement, and a name asked for at
another version is refused rather than served by different code.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from trex_eval.errors import ConfigError

T = TypeVar("T")


def load_target(target: str, *, what: str) -> object:
    """The attribute a ``"module:attribute"`` target names.

    Raises:
        ConfigError: the target is malformed, or its module or attribute is missing from this
            installation (``what`` names the registry entry in the message).
    """
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"{what}: malformed target {target!r}", hint="write it as 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is None or not module_name.startswith(error.name):
            raise
        raise ConfigError(
            f"{what} is not available: module {module_name} is missing",
            hint="reinstall trex-eval; the installation is incomplete",
        ) from error
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{what}: {module_name} has no attribute {attribute!r}") from None


def instance_of(cls: type[T]) -> Callable[[object], T | None]:
    """An ``accept`` for a registry of instances of the concrete class ``cls``."""

    def accept(value: object) -> T | None:
        return value if isinstance(value, cls) else None

    return accept


def takes_arguments(value: object, count: int) -> bool:
    """Whether ``value`` is callable with ``count`` positional arguments (what an ``accept`` of a
    registry of functions checks: a target naming a constant or a function of another arity is
    refused when it loads, not at its first call)."""
    if not callable(value):
        return False
    try:
        inspect.signature(value).bind(*([None] * count))
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: assume it fits
        return True
    return True


@dataclass(frozen=True)
class Entry:
    """One registry line.

    ``target`` is the ``"module:attribute"`` of the implementation; ``summary`` one line for
    listings; ``version`` the version implemented, required in a versioned registry and refused
    in another. A kind may subclass it to declare more (rules add their grader kind).
    """

    name: str
    target: str
    summary: str = ""
    version: str | None = None

    @property
    def spec(self) -> str:
        """``name@version``, or the bare name in a registry without versions."""
        return self.name if self.version is None else f"{self.name}@{self.version}"


class Registry(Generic[T]):
    """Named, lazily loaded implementations of one kind.

    ``kind`` names the kind in messages (``"protocol"``, ``"reward policy"``). ``accept`` returns
    a loaded attribute as a ``T``, or ``None`` when it is not one (``expects`` says what it should
    be, for the message). ``versioned`` kinds carry a version on every entry; ``version_of``, when
    given, reads a loaded value's own version, which must equal its entry's (a registry line that
    disagrees with its implementation is refused, never served).

    Entries load on first :meth:`get` and are cached until the name is registered again; loading
    twice from two threads is harmless (imports are locked; both find the same attribute).
    Iterating a registry yields its names in registration order.
    """

    def __init__(
        self,
        kind: str,
        entries: Iterable[Entry],
        *,
        accept: Callable[[object], T | None],
        expects: str,
        versioned: bool = False,
        version_of: Callable[[T], str] | None = None,
    ) -> None:
        self.kind = kind
        self._accept = accept
        self._expects = expects
        self._versioned = versioned
        self._version_of = version_of
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, T] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: Entry) -> None:
        """Register ``entry`` (replacing one of the same name); it loads on first use.

        Raises:
            ConfigError: a versioned kind's entry without a version, or a version on another's.
        """
        if self._versioned != (entry.version is not None):
            needs = "needs a version" if self._versioned else "takes no version"
            raise ConfigError(f"{self.kind} {entry.name!r}: a {self.kind} {needs}", where=entry.target)
        self._entries[entry.name] = entry
        self._loaded.pop(entry.name, None)

    def register(self, name: str, target: str, *, summary: str = "", version: str | None = None) -> None:
        """Register ``"module:attribute"`` as ``name`` (a plug-in's or a test's); see :meth:`add`."""
        self.add(Entry(name, target, summary, version))

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a test's clean-up); nothing happens when it is not registered."""
        self._entries.pop(name, None)
        self._loaded.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order. Imports nothing."""
        return tuple(self._entries)

    def entries(self) -> tuple[Entry, ...]:
        """The registry lines, in registration order. Imports nothing."""
        return tuple(self._entries.values())

    def describe(self) -> str:
        """``"a, b@2, c"``: every entry's name (with its version in a versioned kind), for
        ``--help`` and hints. Imports nothing."""
        return ", ".join(entry.spec for entry in self._entries.values())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def entry(self, name: str) -> Entry:
        """The line registered as ``name``.

        Raises:
            ConfigError: no such name; the message says the close matches and the hint lists
                every name.
        """
        found = self._entries.get(name)
        if found is None:
            raise self.unknown(name)
        return found

    def unknown(self, name: str, *, where: str | None = None) -> ConfigError:
        """``unknown protocol 'defualt' (did you mean 'default'?)``, every name in the hint."""
        close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.6)
        guess = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        return ConfigError(
            f"unknown {self.kind} {name!r}{guess}", where=where, hint=f"choose one of: {self.describe()}"
        )

    def get(self, name: str, *, version: str | None = None, where: str | None = None) -> T:
        """The implementation registered as ``name``, loaded and checked on first use.

        In a versioned registry ``name`` may be written ``name@version`` (or the version given
        apart); a version other than the entry's is refused before anything loads. ``where``
        locates the request in messages (a spec, a file).

        Raises:
            ConfigError: an unknown name (with close matches), another version than the one
                implemented, a target missing from this installation, a target that is not what
                this registry holds, or an implementation whose own version is not its entry's.
        """
        if self._versioned and version is None and "@" in name:
            name, _, version = (part.strip() for part in name.partition("@"))
        entry = self._entries.get(name)
        if entry is None:
            raise self.unknown(name, where=where)
        if version is not None and version != entry.version:
            raise self._other_version(entry, version, where=where)
        if name not in self._loaded:
            self._loaded[name] = self._load(entry)
        return self._loaded[name]

    def _load(self, entry: Entry) -> T:
        what = f"{self.kind} {entry.name!r}"
        value = self._accept(load_target(entry.target, what=what))
        if value is None:
            raise ConfigError(
                f"{what}: {entry.target} is not {self._expects}",
                hint=f"point the {self.kind}'s registry line at {self._expects}",
            )
        if self._version_of is not None and self._version_of(value) != entry.version:
            raise ConfigError(
                f"{what}: {entry.target} implements version {self._version_of(value)}, "
                f"its registry line says {entry.version}",
                hint="make the registry line's version the implementation's",
            )
        return value

    def _other_version(self, entry: Entry, asked: str, *, where: str | None) -> ConfigError:
        return ConfigError(
            f"{self.kind} {entry.name!r} is implemented at version {entry.version}; "
            f"version {asked} was asked for",
            where=where,
            hint=f"use {entry.spec} (or no version) and note the change in results, or install the "
            f"trex-eval release that implements {entry.name}@{asked}",
        )
