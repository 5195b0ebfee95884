"""subrosa.libpq: the search's own PostgreSQL connection reads what psycopg reads.

Every row here is asked of the server through both connections (tests.pgboth's
`typed`: values and their types); the array parser is also tried alone, and on any
list of texts hypothesis makes up."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subrosa import libpq, pg
from subrosa.errors import SubrosaError
from tests.conftest import Db, RunCli
from tests.pgboth import typed

pytestmark = pytest.mark.engines("postgresql")


@pytest.fixture
def conns(db: Db) -> Iterator[tuple[libpq.Connection, pg.Connection]]:
    lib = libpq.load()
    assert lib is not None, "no libpq: psycopg_binary ships one, so does libpq5"
    fast, slow = libpq.connect(db.url, lib), pg.connect(db.url)
    try:
        yield fast, slow
    finally:
        fast.close()
        slow.close()


def _same(conns: tuple[libpq.Connection, pg.Connection], sql: str, *params: Any) -> list[Any]:
    fast, slow = conns
    rows = fast.execute(sql, list(params)).fetchall()
    assert typed(rows) == typed(slow.execute(sql, list(params)).fetchall())
    return rows


def test_each_type_reads_as_psycopg_reads_it(conns: Any) -> None:
    rows = _same(
        conns,
        "SELECT 1::int2, 70000::int4, 5000000000::int8, true, false, 1.5::float4,"
        " 0.1::float8, 'NaN'::float8, '-Infinity'::float4, 1.10::numeric, 'x'::text,"
        " 'y'::varchar(3), 'n'::name, 'c'::\"char\", 'b'::char(3), 'pg_class'::regclass::oid,"
        " '2026-01-02 03:04:05'::timestamp, '2026-01-02 03:04:05.25'::timestamp,"
        " NULL::text, ''::text, NULL::integer, 'ünïcødé 東京 \U0001f600'",
    )
    assert rows[0][:5] == (1, 70000, 5000000000, True, False)
    assert rows[0][9] == Decimal("1.10") and rows[0][14] == "b  "
    assert rows[0][16:22] == (
        "2026-01-02 03:04:05",  # as SQLite stores it
        "2026-01-02 03:04:05.25",
        None,
        "",
        None,
        "ünïcødé 東京 \U0001f600",
    )


def test_arrays_read_as_psycopg_reads_them(conns: Any) -> None:
    rows = _same(
        conns,
        "SELECT ARRAY[1,2,NULL]::int4[], '{}'::int8[], ARRAY[true,false],"
        " ARRAY[1.5,NULL]::float4[],"
        " ARRAY['a,b', 'q\"uote', 'back\\slash', 'NULL', NULL, '', ' sp ', '{x}', '東京']::text[],"
        " ARRAY[ARRAY[1,2],ARRAY[3,4]], ARRAY['2026-01-02 03:04:05'::timestamp],"
        " ARRAY[1.5]::numeric[], ARRAY['v']::varchar[]",
    )
    assert rows[0][4] == ["a,b", 'q"uote', "back\\slash", "NULL", None, "", " sp ", "{x}", "東京"]
    assert rows[0][5] == [[1, 2], [3, 4]]
    assert rows[0][6] == ["2026-01-02 03:04:05"]


def test_the_array_parser_alone() -> None:
    text = libpq.SCALARS[25]
    assert libpq.parse_array("{}", int) == []
    assert libpq.parse_array("{1,NULL,-3}", int) == [1, None, -3]
    quoted = r'{"a,b","NULL",NULL,"q\"u","b\\s",""}'
    assert libpq.parse_array(quoted, text) == ["a,b", "NULL", None, 'q"u', "b\\s", ""]
    assert libpq.parse_array("{{1,2},{3,NULL}}", int) == [[1, 2], [3, None]]
    assert libpq.parse_array('{東京,"ü ü"}', text) == ["東京", "ü ü"]
    with pytest.raises(libpq.Unsupported):
        libpq.parse_array("[0:1]={1,2}", int)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.none(),
            # No NUL, no lone surrogate: neither driver can send them (below).
            st.text(st.characters(exclude_characters="\0", exclude_categories=("Cs",))),
        )
    )
)
def test_any_list_of_texts_comes_back_as_sent(conns: Any, texts: list[str | None]) -> None:
    rows = _same(conns, "SELECT ?::text[], cardinality(?::text[])", texts, texts)
    assert rows[0][0] == texts


def test_a_lone_surrogate_is_refused_by_both_as_psycopg_refuses_it(conns: Any) -> None:
    """Text that is not UTF-8 (a lone surrogate) cannot be sent: both connections raise
    UnicodeEncodeError, which pg.at_once takes as "answer on the other path"."""
    for conn in conns:
        with pytest.raises(UnicodeEncodeError):
            conn.execute("SELECT ?::text[]", [["\ud800"]]).fetchall()


def test_parameters_bind_as_psycopg_binds_them(conns: Any) -> None:
    rows = _same(
        conns,
        "SELECT ?, ? + 1, ? + 1, ?, ?::text IS NULL, ?::text, ? * 2, ? = ANY(?)",
        "it's a ? \\ %s",
        7,
        2**40,
        True,
        None,
        "東京",
        0.25,
        3,
        [1, 2, 3],
    )
    assert rows == [("it's a ? \\ %s", 8, 2**40 + 1, True, True, "東京", 0.5, True)]
    # sqlite3's IN lists, as pg.Connection sends them: one array.
    assert _same(conns, "SELECT 2 IN (?, ?, ?)", 1, 2, 3) == [(True,)]
    assert _same(conns, "SELECT 'b' IN (?, ?)", "a", 'b"') == [(False,)]


def test_a_refused_statement_says_the_servers_words(conns: Any) -> None:
    fast, _ = conns
    with pytest.raises(libpq.UndefinedTable, match="alembic_version"):
        fast.execute("SELECT version_num FROM alembic_version")
    with pytest.raises(libpq.Error, match="division by zero"):
        fast.execute("SELECT 1 / ?", [0])
    with pytest.raises(libpq.Error, match="NUL"):
        fast.execute("SELECT ?", ["a\0b"])
    # Settings come back even when the statement fails.
    with pytest.raises(libpq.Error):
        fast.execute_without("enable_seqscan, enable_indexscan", "SELECT 1 / 0", [])
    assert fast.execute("SHOW enable_seqscan").fetchall() == [("on",)]
    assert fast.execute_without("enable_seqscan", "SHOW enable_seqscan", []) == [("off",)]
    assert fast.execute("SELECT 1").fetchone() == (1,)  # the connection goes on


def test_a_type_it_does_not_read_is_refused_not_guessed(conns: Any) -> None:
    fast, _ = conns
    for sql in (
        "SELECT now()",
        "SELECT now()::date",
        "SELECT '{}'::jsonb",
        "SELECT '[0:1]={1,2}'::int[]",
    ):
        with pytest.raises(libpq.Unsupported):
            fast.execute(sql)


def test_at_once_falls_back_to_psycopg(
    db: Db, monkeypatch: pytest.MonkeyPatch, run: RunCli
) -> None:
    """A value libpq's connection cannot read, or no libpq at all: psycopg's connection
    answers; SUBROSA_PG_DRIVER=libpq says so instead."""
    run("--db", db.url, "db", "upgrade")

    def ask(conn: Any) -> tuple[str, Any]:
        return type(conn).__module__, conn.execute("SELECT now()").fetchone()[0].year > 2000

    def ask_plain(conn: Any) -> str:
        return str(type(conn).__module__)

    assert pg.at_once(db.url, ask) == ("subrosa.pg", True)
    assert pg.at_once(db.url, ask_plain) == "subrosa.libpq"
    monkeypatch.setenv("SUBROSA_PG_DRIVER", "psycopg")
    assert pg.at_once(db.url, ask_plain) == "subrosa.pg"
    monkeypatch.setenv("SUBROSA_PG_DRIVER", "libpq")
    with pytest.raises(SubrosaError, match="does not read"):
        pg.at_once(db.url, ask)
    monkeypatch.setattr(libpq, "_loaded", [])
    monkeypatch.setattr(libpq, "_candidates", lambda: iter(["/nowhere/libpq.so.5"]))
    with pytest.raises(SubrosaError, match="no libpq"):
        pg.at_once(db.url, ask_plain)
    monkeypatch.delenv("SUBROSA_PG_DRIVER")
    assert pg.at_once(db.url, ask_plain) == "subrosa.pg"


def test_a_server_it_cannot_reach_is_named_without_its_password() -> None:
    lib = libpq.load()
    url = "postgresql+psycopg://someone:s3cret-pw@127.0.0.1:1/nowhere?connect_timeout=2"
    with pytest.raises(SubrosaError) as caught:
        libpq.connect(url, lib)
    message = str(caught.value)
    assert "s3cret-pw" not in message and "127.0.0.1" in message and "cannot connect" in message


def test_the_urls_parameters_reach_libpq(db: Db) -> None:
    """sslmode and the other query parameters pass through (subrosa.pg.conninfo())."""
    url = db.url + "&application_name=subrosa-libpq-test&sslmode=disable"
    conn = libpq.connect(url, libpq.load())
    try:
        assert conn.execute("SHOW application_name").fetchall() == [("subrosa-libpq-test",)]
        assert conn.execute("SHOW datestyle").fetchall() == [("ISO, YMD",)]
        assert conn.execute("SHOW max_parallel_workers_per_gather").fetchall() == [("0",)]
        assert conn.execute("SHOW jit").fetchall() == [("off",)]
    finally:
        conn.close()
    # psycopg's connection (every command but search's one-shot process) sets the same.
    conn = pg.connect(url)
    try:
        for setting, value in (("datestyle", "ISO, YMD"), ("jit", "off")):
            assert conn.execute(f"SHOW {setting}").fetchall() == [(value,)]
        assert conn.execute("SHOW max_parallel_workers_per_gather").fetchall() == [("0",)]
    finally:
        conn.close()
