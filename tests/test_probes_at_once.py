"""A search's probes on two connections to a server at once
(subrosa.archive.pgsearch.probes_at_once, docs/team.md round nine): the answers are
the ones one connection gives, whichever connection asks which probe; a second
connection that cannot be opened, or fails, leaves the search to the first; a defect
on the second is not hidden."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from subrosa import libpq, pg
from subrosa.archive import pgsearch
from subrosa.errors import SubrosaError
from subrosa.query import Filters
from subrosa.recall import search
from tests.conftest import Db, RunCli
from tests.test_archive import _record, _transcript

pytestmark = pytest.mark.engines("postgresql")

WORDS = ["deploy", "linter", "cache", "timeout", "glimmerwick", "zanzibarite", "the", "fix"]
QUERIES = [
    "how to fix glimmerwick with the linter",
    "deploy cache timeout",
    "zanzibarite glimmerwick",
    "the linter",
    "cache",
    "glimmerwick deploy nowhere",
]


@pytest.fixture
def archived(memory_dir: Path, db: Db, run: RunCli) -> str:
    """An archive where each word of WORDS is in some messages, two or three together."""
    records = [
        _record(f"m{n}", f"{WORDS[n % 8]} and {WORDS[(n * 3 + 1) % 8]} {n}") for n in range(60)
    ]
    _transcript("s-1.jsonl", *records)
    run("ingest")
    return db.url


def _connect(driver: str, url: str) -> Any:
    if driver == "psycopg":
        return pg.connect(url)
    lib = libpq.load()
    if lib is None:
        pytest.skip("no libpq loads here")
    return libpq.connect(url, lib)


def _alone(conn: Any) -> list[Any]:
    """Each query's results on this connection alone."""
    opener, conn.opener = conn.opener, None
    try:
        return [search(conn, query, Filters(), 10) for query in QUERIES]
    finally:
        conn.opener = opener


def _wait_for_partner(conn: Any, broken: bool = False) -> None:
    """Until the second connection is open (or, `broken`, given up), its thread done."""
    for _ in range(3000):
        partner = conn.partner
        if partner is not None and (partner.broken if broken else partner.conn is not None):
            with partner.idle:
                return
        time.sleep(0.01)
    raise AssertionError("the second connection's thread never got there")


@pytest.fixture(params=["libpq", "psycopg"])
def conn(request: pytest.FixtureRequest, archived: str) -> Iterator[Any]:
    connection = _connect(request.param, archived)
    yield connection
    connection.close()


def _patched(conn: Any, run: Callable[[Any, str, Any], Any]) -> None:
    real = conn._run
    conn._run = lambda sql, params: run(real, sql, params)


def test_both_connections_ask_probes_at_once_and_answer_as_one(conn: Any) -> None:
    """The search's connection waits in its first probe until the second has asked one:
    both ask probes, at the same time; every result is the one connection's."""
    alone = _alone(conn)
    search(conn, QUERIES[0], Filters(), 10)  # the second connection opens
    _wait_for_partner(conn)
    assert conn.partner.conn is not None
    asked = threading.Event()
    waited: list[bool] = []

    def partner(real: Any, sql: str, params: Any) -> Any:
        rows = real(sql, params)
        if "words @@" in sql:
            asked.set()
        return rows

    def first(real: Any, sql: str, params: Any) -> Any:
        if "words @@" in sql and "EXISTS" not in sql and not waited:
            waited.append(asked.wait(30))
        return real(sql, params)

    _patched(conn.partner.conn, partner)
    _patched(conn, first)
    together = [search(conn, query, Filters(), 10) for query in QUERIES]
    assert waited == [True]  # the second connection asked a probe while the first waited
    assert together == alone
    assert [r for r in together[0] if r["kind"] == "message"]


def test_a_second_connection_that_cannot_open_leaves_it_to_the_first(conn: Any) -> None:
    alone = _alone(conn)
    opened: list[int] = []

    def refused() -> Any:
        opened.append(1)
        raise SubrosaError("the server: cannot connect (too many clients).")

    conn.opener = refused
    first = [search(conn, query, Filters(), 10) for query in QUERIES]
    _wait_for_partner(conn, broken=True)
    assert opened == [1] and conn.partner.conn is None
    again = [search(conn, query, Filters(), 10) for query in QUERIES]
    assert first == again == alone
    assert opened == [1]  # not tried again


def test_a_statement_that_fails_on_the_second_is_asked_on_the_first(conn: Any) -> None:
    alone = _alone(conn)
    search(conn, QUERIES[0], Filters(), 10)
    _wait_for_partner(conn)
    other = conn.partner.conn
    errors = other.errors

    def lost(real: Any, sql: str, params: Any) -> Any:
        raise errors.Error("server closed the connection unexpectedly")

    _patched(other, lost)
    assert [search(conn, query, Filters(), 10) for query in QUERIES] == alone
    _wait_for_partner(conn, broken=True)
    assert conn.partner.conn is None


def test_a_defect_on_the_second_connection_is_raised(conn: Any) -> None:
    search(conn, QUERIES[0], Filters(), 10)
    _wait_for_partner(conn)

    def defect(real: Any, sql: str, params: Any) -> Any:
        raise ValueError("a defect")

    _patched(conn.partner.conn, defect)
    with pytest.raises(ValueError, match="a defect"):
        for query in QUERIES * 5:  # until the second connection takes a probe
            search(conn, query, Filters(), 10)


def test_closing_the_search_connection_closes_the_second(conn: Any) -> None:
    search(conn, QUERIES[0], Filters(), 10)
    _wait_for_partner(conn)
    other = conn.partner.conn
    closed: list[int] = []
    close = other.close
    other.close = lambda: (closed.append(1), close())
    conn.close()
    assert closed == [1]


def test_one_probe_needs_no_second_connection(conn: Any) -> None:
    opened: list[int] = []
    conn.opener = lambda: opened.append(1)
    search(conn, "cache", Filters(), 10)
    assert opened == [] and conn.partner is None
    assert pgsearch.probes_at_once(conn, [("'cache'", False)]) is None


def test_a_one_shot_search_keeps_to_one_connection(archived: str) -> None:
    """`subrosa search` (pg.at_once) asks its probes on its one connection: a second
    one opened for one search costs about what it saves (docs/team.md, round nine)."""
    seen: list[Any] = []

    def searched(conn: Any) -> Any:
        found = search(conn, QUERIES[0], Filters(), 10)
        seen.append((conn.opener, conn.partner))
        return found

    assert pg.at_once(archived, searched)
    assert seen == [(None, None)]
