"""Both connections of a search on a server at once: subrosa.libpq's and psycopg's
(subrosa.pg), every query asked of both and their rows compared, value by value and
type by type; statements that write (a fact's hit) run once, through libpq.

The `run` fixture answers every `subrosa search` on a server through this (as a real
process answers it: the fast path), so the suite's searches hold the libpq
connection to the psycopg connection's behaviour, row for row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from subrosa import libpq, pg
from subrosa.libpq import connect as libpq_connect


def typed(rows: list[Any]) -> list[Any]:
    """Rows with each value's type beside it (1 == 1.0 == True in Python)."""

    def one(value: Any) -> Any:
        if isinstance(value, list | tuple):
            return (type(value).__name__, [one(item) for item in value])
        return (type(value).__name__, repr(value))  # NaN is not NaN

    return [one(tuple(row)) for row in rows]


def _reads(sql: str) -> bool:
    return sql.lstrip()[:6].upper() in ("SELECT", "WITH")


class Both:
    """subrosa.pg.Connection's interface over a libpq and a psycopg connection."""

    errors = libpq.errors

    def __init__(self, fast: libpq.Connection, slow: pg.Connection) -> None:
        self.fast, self.slow = fast, slow
        self.matches: dict[str, float] = {}
        self.answers: dict[Any, Any] = {}
        self.common: dict[str, float] | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> libpq.Rows:
        if not _reads(sql):
            return self.fast.execute(sql, params)
        return libpq.Rows(self._compared(lambda c: c.execute(sql, params).fetchall()))

    def execute_without(self, settings: str, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._compared(lambda c: c.execute_without(settings, sql, params))

    def _compared(self, ask: Any) -> list[Any]:
        try:
            rows = list(ask(self.fast))
        except libpq.Error as refused:
            try:
                ask(self.slow)
            except self.slow.errors.Error:
                raise refused from None
            raise AssertionError("libpq refused a statement psycopg runs") from None
        expected = list(ask(self.slow))
        assert typed(rows) == typed(expected)
        return rows

    def close(self) -> None:
        self.fast.close()
        self.slow.close()


def both(url: str, lib: Any) -> Both:
    """What subrosa.libpq.connect() is replaced with in the tests' searches."""
    return Both(libpq_connect(url, lib), pg.connect(url))
