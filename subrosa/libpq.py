"""A PostgreSQL connection for `subrosa search`'s fast path, through libpq itself
(ctypes), with the manners of subrosa.pg.Connection: the same SQL (`?` placeholders,
IN lists as `= ANY(...)`), the same rows (values read from text by their column's
type, timestamps as the text SQLite stores), the same session settings.

Why by hand: importing psycopg costs ~110 ms here (its pq wrapper, importlib.metadata,
asyncio, ssl, logging, its ~1,000 error classes), more than a whole search of a
gigabyte of transcripts; a process that connects and queries through libpq costs ~30
ms whole. pg8000 (pure Python) costs ~75 ms to import. So the one-shot search process
(subrosa.pg.at_once) speaks to libpq directly: the few calls a text-format query needs.
psycopg stays the driver for everything else (ingest, migrations, facts, SQLAlchemy),
and for the search too when no libpq can be loaded or a column has a type this
module does not read (Unsupported: it never guesses).

The library: the libpq psycopg_binary ships (found beside the package, not imported),
else the system's `libpq.so.5` (not ctypes.util.find_library: it runs ldconfig).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator, Sequence
from functools import lru_cache

from subrosa.errors import SubrosaError, hide_passwords, one_line_reason
from subrosa.pg import (
    Manners,
    _planned_once,
    behind_pooler,
    conninfo,
    opening_failed,
    settings,
    with_passfile_once,
)

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONNECTION_OK = 0
PGRES_COMMAND_OK = 1
PGRES_TUPLES_OK = 2
PG_DIAG_SQLSTATE = ord("C")
SYSTEM_LIBRARIES = ("libpq.so.5", "libpq.5.dylib")


class Error(Exception):
    """A statement the server refused, or a lost connection: its message."""

    sqlstate: str | None = None


class UndefinedTable(Error):
    """SQLSTATE 42P01 (a blank database has no alembic_version)."""


class Unsupported(Exception):  # noqa: N818 (what it is, as psycopg's NotSupportedError)
    """A value of a type this module does not read or write: psycopg does it."""


class errors:  # noqa: N801 (psycopg.errors' place: `conn.errors.Error`)
    """The exception classes callers catch, by the names psycopg.errors gives them."""

    Error = Error
    UndefinedTable = UndefinedTable


def _candidates() -> Iterator[str]:
    """Where a libpq may be: psycopg_binary's own (auditwheel's folder beside the
    package, listed without importing it), then the system's, by name (the loader's
    search, no ldconfig)."""
    for entry in sys.path:
        libs = os.path.join(entry or ".", "psycopg_binary.libs")
        try:
            names = sorted(os.listdir(libs))
        except OSError:
            continue
        yield from (os.path.join(libs, n) for n in names if n.startswith("libpq-") and ".so" in n)
    yield from SYSTEM_LIBRARIES


_loaded: list[Any] = []


def load() -> Any | None:
    """libpq, its functions typed; None when no libpq can be loaded."""
    if _loaded:
        return _loaded[0]
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            _declare(lib)
        except (OSError, AttributeError):  # not loadable, or not a libpq with these calls
            continue
        _loaded.append(lib)
        return lib
    return None


def _declare(lib: Any) -> None:
    p, i, s, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint
    for name, restype, argtypes in (
        ("PQconnectdb", p, [s]),
        ("PQlibVersion", i, []),
        ("PQstatus", i, [p]),
        ("PQbackendPID", i, [p]),
        ("PQerrorMessage", s, [p]),
        ("PQexec", p, [p, s]),
        ("PQexecParams", p, [p, s, i, p, p, p, p, i]),
        ("PQprepare", p, [p, s, s, i, p]),
        ("PQexecPrepared", p, [p, s, i, p, p, p, i]),
        ("PQresultStatus", i, [p]),
        ("PQresultErrorMessage", s, [p]),
        ("PQresultErrorField", s, [p, i]),
        ("PQntuples", i, [p]),
        ("PQnfields", i, [p]),
        ("PQfname", s, [p, i]),
        ("PQftype", u, [p, i]),
        ("PQgetvalue", s, [p, i, i]),
        ("PQgetisnull", i, [p, i, i]),
        ("PQclear", None, [p]),
        ("PQfinish", None, [p]),
    ):
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes


# ---------------------------------------------------------------- values


def _bool(text: str) -> bool:
    return text == "t"


def _decimal(text: str) -> Any:
    from decimal import Decimal

    return Decimal(text)


def _text(text: str) -> str:
    return text


# Column types by OID: how their text reads as psycopg would load it (a timestamp: its
# text, as pg.connect() registers). bool, int2/4/8, oid, float4/8, numeric, text,
# varchar, name, "char", bpchar, unknown, timestamp.
SCALARS: dict[int, Any] = {
    16: _bool,
    21: int,
    23: int,
    20: int,
    26: int,
    700: float,
    701: float,
    1700: _decimal,
    25: _text,
    1043: _text,
    19: _text,
    18: _text,
    1042: _text,
    705: _text,
    1114: _text,
}
# Arrays of those, by their OID: the element's OID.
ARRAYS = {
    1000: 16,
    1005: 21,
    1007: 23,
    1016: 20,
    1028: 26,
    1021: 700,
    1022: 701,
    1231: 1700,
    1009: 25,
    1015: 1043,
    1003: 19,
    1002: 18,
    1014: 1042,
    1115: 1114,
}


def parse_array(text: str, element: Any) -> list[Any]:
    """An array's text form (`{1,2}`, `{"a,b",NULL,"q\\"uote"}`, `{{1},{2}}`) as lists,
    each element read by `element`; a quoted NULL is the text NULL, a bare one None."""
    if not text.startswith("{"):  # `[0:1]={...}`: bounds other than 1
        raise Unsupported(f"an array with explicit bounds ({text[:20]})")
    if '"' not in text and "\\" not in text and "{" not in text[1:]:
        if text == "{}":
            return []
        return [None if item.upper() == "NULL" else element(item) for item in text[1:-1].split(",")]
    value, end = _array_at(text, 0, element)
    if end != len(text):
        raise Unsupported(f"an array's text past its end ({text[end : end + 20]})")
    return value


def _array_at(text: str, at: int, element: Any) -> tuple[list[Any], int]:
    """The array starting at text[at] ("{"), and where it ends."""
    out: list[Any] = []
    at += 1
    if text[at] == "}":
        return out, at + 1
    while True:
        if text[at] == "{":
            item, at = _array_at(text, at, element)
            out.append(item)
        elif text[at] == '"':
            chars: list[str] = []
            at += 1
            while text[at] != '"':
                if text[at] == "\\":
                    at += 1
                chars.append(text[at])
                at += 1
            out.append(element("".join(chars)))
            at += 1
        else:
            chars = []
            while text[at] not in ",}":
                if text[at] == "\\":
                    at += 1
                chars.append(text[at])
                at += 1
            bare = "".join(chars)
            out.append(None if bare.upper() == "NULL" else element(bare))
        if text[at] == "}":
            return out, at + 1
        if text[at] != ",":
            raise Unsupported(f"an array's text ({text[at : at + 20]})")
        at += 1


def reader(oid: int, name: str) -> Any:
    """How a column of type `oid` reads from its text's bytes; Unsupported for any
    other type."""
    scalar = SCALARS.get(oid)
    if scalar in (int, float):
        return scalar  # they read bytes as they are
    if scalar is _text:
        return bytes.decode
    if scalar is not None:
        return lambda raw: scalar(raw.decode())
    element = SCALARS.get(ARRAYS.get(oid, -1))
    if element is not None:
        return lambda raw: parse_array(raw.decode(), element)
    raise Unsupported(f"column {name!r} has type OID {oid}, which subrosa.libpq does not read")


def _array_text(values: list[Any]) -> str:
    """A list as an array's text, each element quoted (the server reads it as the type
    its place wants, as it reads a list of ids: subrosa.pg._ids_as_text)."""
    items = []
    for value in values:
        if value is None:
            items.append("NULL")
        elif isinstance(value, list):
            items.append(_array_text(value))
        else:
            text = _param(value)[0].decode()
            items.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "{" + ",".join(items) + "}"


def _param(value: Any) -> tuple[bytes, int]:
    """A parameter's text and type OID as psycopg sends them: a str of unknown type
    (the server reads it as its place wants), an int as the smallest integer type
    that holds it, a float as float8, a bool as bool."""
    if isinstance(value, str):
        if "\0" in value:
            raise Error("PostgreSQL text cannot contain NUL (0x00) characters")
        return value.encode(), 0
    if isinstance(value, bool):
        return (b"t" if value else b"f"), 16
    if isinstance(value, int):
        oid = 21 if -(2**15) <= value < 2**15 else 23 if -(2**31) <= value < 2**31 else 20
        return str(value).encode(), oid if -(2**63) <= value < 2**63 else 1700
    if isinstance(value, float):
        return repr(value).encode(), 701
    if isinstance(value, list):
        return _array_text(value).encode(), 0
    raise Unsupported(f"a parameter of type {type(value).__name__}")


@lru_cache(maxsize=512)
def _numbered(sql: str) -> str:
    """SQL written for sqlite3 as the server reads it: `?` as `$1`, `$2`, …"""
    if sql.startswith("BEGIN IMMEDIATE"):
        return "BEGIN"
    parts = sql.split("?")
    return "".join(part + f"${n}" for n, part in enumerate(parts[:-1], 1)) + parts[-1]


# ---------------------------------------------------------------- the connection


class Rows:
    """A statement's rows, fetched at once, as a DB-API cursor hands them over."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows
        self._at = 0

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._at = self._rows[self._at :], len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


class Connection(Manners):
    """A libpq connection with subrosa.pg.Connection's interface, for the search."""

    errors = errors

    def __init__(self, lib: Any, handle: int) -> None:
        super().__init__()
        self.lib = lib
        self.handle = handle
        # Prepared statements by text and parameter types (as psycopg keys them: an
        # integer of a larger type than the first run's needs a statement of its own).
        self._prepared: dict[tuple[str, tuple[int, ...]], bytes] = {}

    def _run(self, sql: str, params: Sequence[Any] | None) -> Rows:
        return Rows(self._exec(_numbered(sql), params or ()))

    def close(self) -> None:
        if self.handle:
            self.lib.PQfinish(self.handle)
            self.handle = 0

    def _simple(self, sql: str) -> None:
        """Statements without parameters or rows (settings), in one round trip."""
        self._rows(self.lib.PQexec(self.handle, sql.encode()))

    def _exec(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        count = len(params)
        values = (ctypes.c_char_p * max(1, count))()
        types = (ctypes.c_uint * max(1, count))()
        for n, value in enumerate(params):
            if value is not None:
                values[n], types[n] = _param(value)
        lib = self.lib
        if self.pooled or not _planned_once(sql):
            result = lib.PQexecParams(
                self.handle, sql.encode(), count, types, values, None, None, 0
            )
            return self._rows(result)
        key = (sql, tuple(types[:count]))
        name = self._prepared.get(key)
        if name is None:
            name = f"subrosa_{len(self._prepared)}".encode()
            self._rows(lib.PQprepare(self.handle, name, sql.encode(), count, types))
            self._prepared[key] = name
        return self._rows(lib.PQexecPrepared(self.handle, name, count, values, None, None, 0))

    def _rows(self, result: int | None) -> list[tuple[Any, ...]]:
        lib = self.lib
        if not result:
            raise Error(_message(lib.PQerrorMessage(self.handle)))
        try:
            status = lib.PQresultStatus(result)
            if status not in (PGRES_COMMAND_OK, PGRES_TUPLES_OK):
                state = _sqlstate(lib, result)
                message = _message(lib.PQresultErrorMessage(result))
                # Without libpq's severity, as psycopg's message is.
                for severity in ("ERROR:", "FATAL:"):
                    message = message.removeprefix(severity).lstrip()
                error = (UndefinedTable if state == "42P01" else Error)(message)
                error.sqlstate = state  # psycopg's attribute: subrosa.errors.cut_short reads it
                raise error
            return _read(lib, result)
        finally:
            lib.PQclear(result)


def _sqlstate(lib: Any, result: int) -> str | None:
    state = lib.PQresultErrorField(result, PG_DIAG_SQLSTATE)
    return None if state is None else bytes(state).decode()


def _message(raw: bytes | None) -> str:
    return one_line_reason((raw or b"").decode(errors="replace")) or "the connection was lost"


def _read(lib: Any, result: int) -> list[tuple[Any, ...]]:
    """Every row of a result, each value read by its column's type."""
    fields = range(lib.PQnfields(result))
    readers = [
        reader(lib.PQftype(result, f), (lib.PQfname(result, f) or b"").decode()) for f in fields
    ]
    getvalue, isnull = _fast(lib)
    handle = ctypes.c_void_p(result)
    rows = []
    for r in range(lib.PQntuples(result)):
        row: list[Any] = []
        for f in fields:
            raw = getvalue(handle, r, f)
            # A NULL's value is "" too: ask only then (one call less per value).
            if not raw and isnull(handle, r, f):
                row.append(None)
            else:
                row.append(readers[f](raw))
        rows.append(tuple(row))
    return rows


@lru_cache(maxsize=4)
def _fast(lib: Any) -> tuple[Any, Any]:
    """PQgetvalue and PQgetisnull without argument types (the result passed as a
    c_void_p, row and column as C ints): half the cost of a call that converts its
    arguments, a search reads thousands of values."""
    getvalue, isnull = lib["PQgetvalue"], lib["PQgetisnull"]
    getvalue.restype, isnull.restype = ctypes.c_char_p, ctypes.c_int
    return getvalue, isnull


def connect(url: str, lib: Any) -> Connection:
    """A connection through `lib` (load()) to the server at `url`, set as
    subrosa.pg.connect() sets psycopg's (subrosa.pg.SETTINGS: ISO dates, no parallel
    workers, no JIT; behind a pooler, the dates alone), and UTF-8."""
    handle = lib.PQconnectdb(with_passfile_once(conninfo(url, lib.PQlibVersion())).encode())
    if not handle or lib.PQstatus(handle) != CONNECTION_OK:
        reason = hide_passwords(_message(lib.PQerrorMessage(handle) if handle else None))
        if handle:
            lib.PQfinish(handle)
        raise SubrosaError(f"{hide_passwords(url)}: cannot connect ({reason}).")
    conn = Connection(lib, handle)
    pid = lib.PQbackendPID(handle)
    conn.pooled = behind_pooler(url, pid)
    try:
        opening = f"SET client_encoding = 'UTF8'; {settings(conn.pooled, pid)}"
        rows = conn._rows(lib.PQexec(handle, opening.encode()))
    except Error as exc:
        conn.close()
        raise opening_failed(url, exc) from None
    conn.pooled = conn.pooled or behind_pooler(url, pid, rows[0][1] if rows else -1)
    return conn
