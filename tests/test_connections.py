"""What subrosa asks of every connection to a server (subrosa.pg.connect_defaults): over
TCP, keepalives and a TCP user timeout, so that a connection whose path died in silence
fails within ~30 s; on a unix socket, none of them. The URL's own values win. And what
it takes out of the URL before libpq reads it (`subrosa_pooler`, docs/team.md).

The settings are read back from the sockets themselves (getsockopt) of a real
connection through each of subrosa's three ways to a server: psycopg (subrosa.pg),
libpq itself (subrosa.libpq, `subrosa search`) and SQLAlchemy's pool (subrosa.db), over
TCP through tests/tcprelay.py to the test cluster, whose own socket is a unix one.
tests/test_mcp_connection.py shows what they are for: a dead path, and a search that
answers all the same.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
from collections.abc import Callable, Iterator

import pytest

from subrosa import libpq, pg
from subrosa.errors import SubrosaError
from tests.conftest import Db
from tests.tcprelay import Relay, relay, target

TCP = "postgresql+psycopg://me@db.example.com:5432/team?sslmode=require"
DEFAULTS = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}
# A socket's options as the kernel holds them, by the libpq setting that sets each.
OPTIONS = {
    "keepalives": (socket.SOL_SOCKET, socket.SO_KEEPALIVE),
    "keepalives_idle": (socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPIDLE", 4)),
    "keepalives_interval": (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
    "keepalives_count": (socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
    "tcp_user_timeout": (socket.IPPROTO_TCP, getattr(socket, "TCP_USER_TIMEOUT", 18)),
}


def parameters(info: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in info.partition("?")[2].split("&") if p)


@pytest.mark.parametrize(
    "url",
    [
        TCP,
        "postgresql://me@127.0.0.1/team",
        "postgresql://me@[::1]:5433/team",
        "postgresql://me@/team?host=db.example.com",
        "postgresql://me@/team?hostaddr=10.0.0.7",
        "postgresql://me@/team?host=/run/postgresql,db.example.com",  # one of them TCP
        "postgresql://me@a.example.com:5432,%2Frun%2Fpostgresql/team",
        "postgresql://me@/team?service=team",  # the service file's host: unknown here
    ],
)
def test_a_tcp_url_gets_the_keepalives_and_a_user_timeout(url: str) -> None:
    got = parameters(pg.conninfo(url))
    assert {k: got[k] for k in DEFAULTS} == DEFAULTS, got


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://me@/team",  # libpq's default: the unix socket
        "postgresql://me@%2Frun%2Fpostgresql/team",
        "postgresql+psycopg://me@/team?host=%2Ftmp%2Fsubrosa-pg-x",
        "postgresql://me@/team?host=/run/postgresql",
        "postgresql://me@/team?host=@abstract",
    ],
)
def test_a_unix_socket_is_left_as_it_was(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PGHOST", "PGHOSTADDR", "PGSERVICE"):
        monkeypatch.delenv(name, raising=False)
    assert parameters(pg.conninfo(url)).keys() - parameters(url).keys() == {"connect_timeout"}


def test_a_url_naming_no_host_goes_where_pghost_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGHOST", "db.example.com")
    assert "keepalives=1" in pg.conninfo("postgresql://me@/team")
    monkeypatch.setenv("PGHOST", "/run/postgresql")
    assert "keepalives" not in pg.conninfo("postgresql://me@/team")


def test_the_urls_own_settings_win_each_one() -> None:
    got = parameters(pg.conninfo(TCP + "&keepalives_idle=60&tcp_user_timeout=0"))
    assert got["keepalives_idle"] == "60" and got["tcp_user_timeout"] == "0"
    assert got["keepalives_interval"] == "5" and got["keepalives"] == "1"
    assert pg.conninfo(TCP + "&keepalives=0").count("keepalives=") == 1


def test_a_libpq_before_12_is_not_given_a_user_timeout() -> None:
    """libpq 11 refuses `tcp_user_timeout` ("invalid URI query parameter")."""
    got = parameters(pg.conninfo(TCP, 110022))
    assert "tcp_user_timeout" not in got and got["keepalives_idle"] == "10"


def test_the_pooler_declared_never_reaches_libpq() -> None:
    from subrosa.db import database_url

    url = TCP + "&subrosa_pooler=transaction"
    assert pg.declared_pooler(url) and not pg.declared_pooler(TCP)
    assert "subrosa_pooler" not in pg.conninfo(url) and "sslmode=require" in pg.conninfo(url)
    assert "subrosa_pooler" not in database_url(url).query
    assert database_url(url).query["sslmode"] == "require"
    plain = "postgresql://me@db.example.com/team?subrosa_pooler=transaction"
    assert pg.conninfo(plain).startswith("postgresql://me@db.example.com/team?connect_timeout=")
    with pytest.raises(SubrosaError) as refused:
        pg.conninfo(TCP.replace("me@", "me:pw99@") + "&subrosa_pooler=yes")
    said = str(refused.value)
    assert (
        "subrosa_pooler='yes' is not a pooler mode" in said and "subrosa_pooler=transaction" in said
    )
    assert "pw99" not in said and "\n" not in said


# ---------------------------------------------------------------- on real sockets


@pytest.fixture
def through(db: Db) -> Iterator[Relay]:
    """A relay over TCP to the test's database (tests/tcprelay.py)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("tests/tcprelay.py is Linux's (SO_ATTACH_FILTER)")
    with relay(target(db.url)) as running:
        yield running


def options(fd: int) -> dict[str, str]:
    """The keepalive and user-timeout options of the socket `fd`, by libpq's names (a
    unix socket has none but SO_KEEPALIVE: "-")."""
    shown = {}
    with socket.socket(fileno=os.dup(fd)) as sock:
        for name, where in OPTIONS.items():
            try:
                shown[name] = str(sock.getsockopt(*where))
            except OSError:
                shown[name] = "-"
    return shown


def psycopg_socket(url: str) -> dict[str, str]:
    conn = pg.connect(url)
    try:
        return options(conn.raw.fileno())
    finally:
        conn.close()


def libpq_socket(url: str) -> dict[str, str]:
    lib = libpq.load()
    assert lib is not None
    conn = libpq.connect(url, lib)
    try:
        socket_of = lib["PQsocket"]
        socket_of.restype, socket_of.argtypes = ctypes.c_int, [ctypes.c_void_p]
        return options(socket_of(conn.handle))
    finally:
        conn.close()


def pool_socket(url: str) -> dict[str, str]:
    from subrosa.db import dispose_all, get_engine

    try:
        with get_engine(url).connect() as conn:
            return options(conn.connection.dbapi_connection.fileno())  # type: ignore[union-attr]
    finally:
        dispose_all()


DRIVERS: list[Callable[[str], dict[str, str]]] = [psycopg_socket, libpq_socket, pool_socket]


@pytest.mark.engines("postgresql")
@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.__name__)
def test_each_driver_s_tcp_socket_carries_them(
    db: Db, through: Relay, driver: Callable[[str], dict[str, str]]
) -> None:
    expected = {k: v for k, v in DEFAULTS.items() if k != "connect_timeout"}
    assert driver(through.url(db.url)) == expected
    theirs = driver(through.url(db.url, keepalives_idle="60", tcp_user_timeout="5000"))
    assert theirs == {**expected, "keepalives_idle": "60", "tcp_user_timeout": "5000"}
    assert through.accepted == 2
    # The test cluster's own unix socket: the kernel's defaults (keepalives off).
    assert driver(db.url)["keepalives"] == "0"


def test_a_second_equals_sign_in_a_parameter_reaches_libpq_encoded() -> None:
    # docs/team.md writes `options=-c statement_timeout=5000`; SQLAlchemy reads the value
    # whole, libpq's URL parser refused it ("extra key/value separator").
    info = pg.conninfo("postgresql://me@/team?options=-c statement_timeout=5000&sslmode=require")
    assert "options=-c%20statement_timeout%3D5000&sslmode=require&" in info
    encoded = "postgresql://me@/team?options=-c%20statement_timeout%3D5000"
    assert pg.conninfo(encoded).startswith(encoded + "&connect_timeout=")
