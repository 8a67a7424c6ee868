"""Scores published elsewhere ("reported, not re-run"), read from a CSV such as the committed
``results/published/published.csv``.

Reports show these rows in their own table, under a heading that says they were not re-run, and
never in the measured leaderboard: their protocol, grading rule and averaging method are
whatever their source says (often not stated), so they cannot share a column with measured runs.

File format: UTF-8 CSV with exactly the header ``model,benchmark,score_pct,metric,rule,source,url,note``
(files written before the ``rule`` column, without it, are read too). ``benchmark`` is a trex-eval
benchmark name -- its label version included (``mamo-easylp@sirl-fixed``), so that a reported row
sits beside measured rows of the same version only -- ``FAMILY@unstated`` when the source does not
say which version it used, or ``average`` for a headline average over several; ``score_pct`` is a
percentage in ``[0, 100]``; ``metric`` says what the number measures in the source's words;
``rule`` is the trex-eval rule that expresses the source's grading (``sirl``, ``orlm``), empty when
the source does not state it; ``url`` points at the source, pinned to a commit when it is a GitHub
file (``.../blob/<commit>/...``); ``note`` says what is derived, uncertain or unstated.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from pydantic import Field, ValidationError

from trex_eval.errors import ConfigError, TrexError
from trex_eval.grading.registry import get_rule
from trex_eval.records import Record

COLUMNS = ("model", "benchmark", "score_pct", "metric", "rule", "source", "url", "note")
LEGACY_COLUMNS = tuple(column for column in COLUMNS if column != "rule")
"""The header before the ``rule`` column (read as rule not stated)."""

_GITHUB = re.compile(r"^https://github\.com/[^/]+/[^/]+/")
_PINNED = re.compile(r"^https://github\.com/[^/]+/[^/]+/(?:blob|tree|raw)/[0-9a-f]{7,40}(?:/|$)")

_PACKAGE = Path(__file__).resolve().parents[1]
PUBLISHED_DIR = Path("results") / "published"
"""Where a checkout keeps its published artefacts (this CSV, the audits written with ``--publish``);
no command writes there unless asked to."""

_SHIPPED = (
    _PACKAGE / "_assets" / PUBLISHED_DIR / "published.csv",  # in a wheel (force-included by pyproject)
    _PACKAGE.parent / PUBLISHED_DIR / "published.csv",  # in a source checkout
)


class PublishedScore(Record):
    """One score as its source reported it (see the module docstring for the fields)."""

    model: str = Field(min_length=1)
    benchmark: str = Field(min_length=1)
    score_pct: float = Field(ge=0.0, le=100.0)
    metric: str = Field(min_length=1)
    rule: str = ""
    source: str = Field(min_length=1)
    url: str = ""
    note: str = ""


def load_published(path: Path) -> tuple[PublishedScore, ...]:
    """Every row of a published-scores CSV, in file order.

    Raises:
        ConfigError: the file is missing or unreadable, its header is not :data:`COLUMNS` (or
            :data:`LEGACY_COLUMNS`), or a row is malformed (missing field, score not a finite
            number in [0, 100], a rule the registry does not know, a GitHub URL not pinned to a
            commit); the message names the file and line.
    """
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) not in (COLUMNS, LEGACY_COLUMNS):
                raise ConfigError(
                    f"unexpected header {reader.fieldnames}",
                    where=str(path),
                    hint=f"the header must be: {','.join(COLUMNS)}",
                )
            rows = []
            for row in reader:
                where = f"{path}:{reader.line_num}"
                if None in row or any(value is None for value in row.values()):
                    raise ConfigError(f"expected {len(reader.fieldnames or ())} fields", where=where)
                rows.append(_parse(row, where=where))
    except OSError as error:
        raise ConfigError(f"cannot read published scores: {error.strerror}", where=str(path)) from None
    return tuple(rows)


def shipped_published_csv() -> Path | None:
    """The committed ``results/published/published.csv``: packaged under
    ``trex_eval/_assets/results/published/`` in a wheel, under the repository root in a source
    checkout; ``None`` when neither exists."""
    return next((path for path in _SHIPPED if path.is_file()), None)


def _parse(row: dict[str, str], *, where: str) -> PublishedScore:
    text = row["score_pct"].strip()
    try:
        score = float(text)
    except ValueError:
        raise ConfigError(f"score_pct {text!r} is not a number", where=where) from None
    if not math.isfinite(score):
        raise ConfigError(f"score_pct {text!r} is not finite", where=where)
    rule = row.get("rule", "").strip()
    if rule:
        try:
            get_rule(rule)
        except TrexError as error:
            raise ConfigError(f"rule {rule!r}: {error.message}", where=where) from None
    url = row["url"].strip()
    # A GitHub page changes with every commit: the number must be traceable to the one it came from.
    if _GITHUB.match(url) and not _PINNED.match(url):
        raise ConfigError(
            f"url {url!r} is not pinned to a commit",
            where=where,
            hint="use https://github.com/OWNER/REPO/blob/COMMIT/PATH",
        )
    try:
        return PublishedScore(
            model=row["model"].strip(),
            benchmark=row["benchmark"].strip(),
            score_pct=score,
            metric=row["metric"].strip(),
            rule=rule,
            source=row["source"].strip(),
            url=url,
            note=row["note"].strip(),
        )
    except ValidationError as error:
        problem = error.errors()[0]
        field = ".".join(str(part) for part in problem["loc"])
        raise ConfigError(f"{field}: {problem['msg']}", where=where) from None
