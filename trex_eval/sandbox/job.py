"""A program to run in the sandbox, with the files it was promised."""

from __future__ import annotations

import posixpath
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..records import InstanceLink, Record
from .runtime.contract import PROGRAM_FILE, WORKDIR_TOKEN

__all__ = ["MAX_LINKS", "PROGRAM_FILE", "WORKDIR_TOKEN", "Job"]

MAX_LINKS = 256
"""Data files one job may be given by reference (MIPLIB-NL's instances name at most a few dozen)."""


class Job(Record):
    """One program run.

    Attributes:
        code: program text, run as ``__main__``; the literal ``@@TREX_WORKDIR@@`` is replaced by
            the absolute working directory first.
        files: relative path (sub-folders allowed) -> text written into the working directory
            before the program starts (``{"data.json": ...}`` for Bench4Opt).
        expect: ``"solve"``: a program that exits cleanly without any solve gets ``no_solve``;
            ``"model_file"``: likewise without any collected model file; ``"any"``: neither.
        gurobi: which gurobipy ``import gurobipy`` gives: ``"real"`` (the installed one),
            ``"highs"`` (the licence-free ``gurobipy_highs`` layer) or ``"auto"`` (real when the
            licence pre-flight passed, else highs; a real run that fails with a size-limit or
            expired licence is rerun under highs).
        links: data files given by reference (:class:`~trex_eval.records.InstanceLink`): each is
            staged once in the sandbox's read-only instance store and appears at its ``name`` in
            the working directory as a symbolic link to it; the program reads it, never writes it.
            At most :data:`MAX_LINKS` per job; names follow the rules of ``files`` and differ from
            them.
        collect: glob patterns (``*``, ``?``, ``**/``) of files the program writes that come back
            as :class:`~trex_eval.records.WrittenFile`.
    """

    code: str
    files: dict[str, str] = Field(default_factory=dict)
    links: tuple[InstanceLink, ...] = Field(default=(), max_length=MAX_LINKS)
    expect: Literal["solve", "model_file", "any"] = "solve"
    gurobi: Literal["auto", "real", "highs"] = "auto"
    collect: tuple[str, ...] = ("**/*.lp", "**/*.mps")

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            _check_relative(path)
        return files

    @model_validator(mode="after")
    def _link_names(self) -> Job:
        names = [link.name for link in self.links]
        for name in names:
            _check_relative(name)
        clash = sorted({posixpath.normpath(n) for n in names} & {posixpath.normpath(f) for f in self.files})
        if clash or len(set(names)) != len(names):
            raise ValueError(f"job link names must be unique and differ from its files: {clash or names}")
        return self


def _check_relative(path: str) -> None:
    normal = posixpath.normpath(path)
    if not path or path.startswith("/") or normal == ".." or normal.startswith("../") or "\\" in path:
        raise ValueError(f"job file path {path!r} must be relative and stay inside the working directory")
    if normal == PROGRAM_FILE:
        raise ValueError(f"job file path {path!r} is reserved for the program itself")
