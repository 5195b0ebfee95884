"""A TCP relay before the test cluster (tests/postgres.py) that can make the path of the
connections it relays die in silence, as a laptop's changed Wi-Fi or a NAT that forgot a
connection does (docs/mcp.md, "The archive's connection").

One thread accepts on 127.0.0.1 and a free port and relays each connection to the
server (the cluster's unix socket, or the host and port of SUBROSA_TEST_PG_URL's).
blackhole() stops relaying the connections open so far without closing either socket,
and drops whatever their clients send from then on before TCP sees it: a socket filter
(classic BPF, `return 0`) on the relay's end of each. Stopping to relay alone would not
do: the relay's kernel would still acknowledge the client's statement and answer its
keepalives, which is a server that hangs, not a path that died; with the filter the
client hears nothing at all, so its keepalives and TCP user timeout are what end the
connection. New connections are relayed as before. Linux only (SO_ATTACH_FILTER); no
privilege needed.
"""

from __future__ import annotations

import contextlib
import ctypes
import selectors
import socket
import struct
import threading
from collections.abc import Iterator

from sqlalchemy.engine import make_url

SO_ATTACH_FILTER = 26  # <asm-generic/socket.h>
# One classic BPF instruction, BPF_RET | BPF_K with k = 0: keep no byte of any packet.
DROP_ALL = struct.pack("HBBI", 0x06, 0, 0, 0)


def target(url: str) -> str | tuple[str, int]:
    """Where a database URL reaches its server: a unix socket's path, or host and port."""
    parsed = make_url(url)
    host = str(parsed.query.get("host") or parsed.host or "/var/run/postgresql")
    port = int(parsed.port or 5432)
    return f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port)


def _drop_everything(sock: socket.socket) -> None:
    """Attach a filter that drops every packet arriving on `sock` before TCP sees it."""
    program = ctypes.create_string_buffer(DROP_ALL)
    fprog = struct.pack("HP", 1, ctypes.addressof(program))  # struct sock_fprog
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


class Relay:
    """Relays 127.0.0.1:`port` to `upstream`; see the module's docstring."""

    def __init__(self, upstream: str | tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.accepted = 0  # connections relayed so far
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ)
        self._waker, self._wake = socket.socketpair()
        self._selector.register(self._waker, selectors.EVENT_READ)
        self._peers: dict[socket.socket, socket.socket] = {}
        self._client_ends: list[socket.socket] = []
        self._held: list[socket.socket] = []  # blackholed: open, never read again
        self._asked: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def url(self, database_url: str, **params: str) -> str:
        """`database_url` through the relay (its database and user, more `params`)."""
        parsed = make_url(database_url)
        return parsed.set(
            drivername="postgresql", host="127.0.0.1", port=self.port, query=params
        ).render_as_string(hide_password=False)

    def blackhole(self) -> int:
        """Make the connections relayed so far a dead path (see the module's docstring);
        how many there were."""
        return self._ask("blackhole")

    def stop(self) -> None:
        self._ask("stop")
        self._thread.join(10)

    def _ask(self, what: str) -> int:
        self._done.clear()
        self._asked = what
        self._wake.send(b"x")
        assert self._done.wait(10), f"the relay did not {what}"
        return len(self._held) // 2

    def _loop(self) -> None:
        while True:
            for key, _ in self._selector.select():
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    self._accept()
                elif sock is self._waker:
                    self._waker.recv(16)
                    if self._asked == "stop":
                        self._close_all()
                        self._done.set()
                        return
                    self._blackhole()
                    self._done.set()
                elif sock in self._peers:
                    self._relay(sock)

    def _accept(self) -> None:
        client, _ = self.listener.accept()
        family = socket.AF_UNIX if isinstance(self.upstream, str) else socket.AF_INET
        server = socket.socket(family, socket.SOCK_STREAM)
        server.connect(self.upstream)
        self._peers[client], self._peers[server] = server, client
        self._client_ends.append(client)
        for end in (client, server):
            self._selector.register(end, selectors.EVENT_READ)
        self.accepted += 1

    def _relay(self, sock: socket.socket) -> None:
        other = self._peers[sock]
        try:
            data = sock.recv(65536)
            if data:
                other.sendall(data)
                return
        except OSError:
            pass
        for end in (sock, other):  # one end closed: close the other
            self._forget(end)
            end.close()

    def _blackhole(self) -> None:
        for client in list(self._client_ends):
            _drop_everything(client)
            server = self._peers[client]
            for end in (client, server):
                self._forget(end)
                self._held.append(end)

    def _forget(self, end: socket.socket) -> None:
        self._peers.pop(end, None)
        if end in self._client_ends:
            self._client_ends.remove(end)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(end)

    def _close_all(self) -> None:
        for end in [*self._peers, *self._held, self.listener, self._waker, self._wake]:
            end.close()
        self._selector.close()


@contextlib.contextmanager
def relay(upstream: str | tuple[str, int]) -> Iterator[Relay]:
    """A running Relay to `upstream`, stopped after."""
    running = Relay(upstream)
    try:
        yield running
    finally:
        running.stop()
