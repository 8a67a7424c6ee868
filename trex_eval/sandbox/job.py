"""A program to run in the sandbox, with the files it was promised."""

from __future__ import annotations

import posixpath
from typing import Literal

from pydantic import Field, field_validator

from ..records import Record
from .runtime.contract import PROGRAM_FILE, WORKDIR_TOKEN

__all__ = ["PROGRAM_FILE", "WORKDIR_TOKEN", "Job"]


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
        collect: glob patterns (``*``, ``?``, ``**/``) of files the program writes that come back
            as :class:`~trex_eval.records.WrittenFile`.
    """

    code: str
    files: dict[str, str] = Field(default_factory=dict)
    expect: Literal["solve", "model_file", "any"] = "solve"
    gurobi: Literal["auto", "real", "highs"] = "auto"
    collect: tuple[str, ...] = ("**/*.lp", "**/*.mps")

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            normal = posixpath.normpath(path)
            if not path or path.startswith("/") or normal == ".." or normal.startswith("../") or "\\" in path:
                raise ValueError(
                    f"job file path {path!r} must be relative and stay inside the working directory"
                )
            if normal == PROGRAM_FILE:
                raise ValueError(f"job file path {path!r} is reserved for the program itself")
        return files
