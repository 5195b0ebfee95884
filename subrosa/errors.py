"""The error hierarchy. The CLI edge turns each into one sentence and an exit code.

Exit codes follow PRODUCT.md: 1 means the check or operation found a problem,
2 means bad usage or invalid input (click's convention).
"""

from __future__ import annotations

from subrosa.lazyre import compile_lazily

# The hooks load this module: collections.abc only for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# `scheme://user:password@host` anywhere in a text. SQLAlchemy writes a password's `@`
# and `/` as %40 and %2F but leaves spaces, so the password runs to the next `@` on its
# line unless a `/` comes first (then the colon was a port's).
_URL_PASSWORD = compile_lazily(r"(?P<head>\b[A-Za-z][\w+]*://[^:/@\s]*):(?P<password>[^@/\n]*)@")
# `?password=…` or `&password=…`: libpq reads a URL's query parameter as it reads
# `user:password@`, so a URL may carry its password there instead (sslpassword alike),
# which SQLAlchemy's hide_password leaves as it is. It runs to the next `&`, `#`, space
# or end (a `:` before a space is the message's, as in `URL: cannot connect`).
_QUERY_PASSWORD = compile_lazily(r"(?i)(?P<head>[?&](?:ssl)?password=)[^&#\s]*?(?=[&#]|:?(?:\s|$))")


def hide_passwords(text: str) -> str:
    """`text` fit to print: the password of any URL in it replaced by `***`, as
    SQLAlchemy's `render_as_string(hide_password=True)` does, but for any text (an
    error message, a malformed URL)."""
    return _QUERY_PASSWORD.sub(r"\g<head>***", _URL_PASSWORD.sub(r"\g<head>:***@", text))


def one_line_reason(text: str) -> str:
    """A driver's message as one line: libpq writes the failure, then a hint on a line
    of its own ("Connection refused" / "Is the server running on that host…?"); the
    lines are joined with a full stop where the first ends without one."""
    out = ""
    for line in text.strip().splitlines():
        line = " ".join(line.split())
        if line:
            out += ("" if not out else " " if out[-1] in ".?!:;," else ". ") + line
    return out


class SubrosaError(Exception):
    """Base class: a message meant for the user, and the exit code it implies.

    A database URL in the message loses its password here, once for every error: a
    message naming the database (`cannot connect to …`) may be printed, logged or
    pasted into a bug report.
    """

    exit_code = 1

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(hide_passwords(str(message)), *args)


class InvalidInput(SubrosaError):
    """The user gave us something we refuse (a broken leaf, a bad path, bad settings)."""

    exit_code = 2


class LeafError(InvalidInput):
    """A leaf file that cannot be registered; the message names the file."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class InvalidLeaf(LeafError):
    """A leaf whose frontmatter parses as YAML but is not a mapping of text keys: refused
    by `fact upsert`, skipped with a warning by generate and adopt."""

    def __init__(self, path: object, problem: str) -> None:
        InvalidInput.__init__(self, f"invalid leaf: {path}: {problem}")
        self.path = path
        self.problem = f"invalid leaf: {problem}"


class NotFound(InvalidInput):
    """A slug, session or file the user named does not exist."""


class ProblemFound(SubrosaError):
    """The operation ran but found a problem (witness failure, pins that do not fit)."""

    exit_code = 1


class NotOwned(ProblemFound):
    """MEMORY.md exists but subrosa did not write it: `subrosa adopt` must take it over first."""


# What a --db naming another kind of server (mysql://, oracle://) is told, by the
# facts' engine and by the archive alike.
SUPPORTED_DATABASES = (
    "subrosa keeps its data in an SQLite file or on a PostgreSQL server; give --db PATH "
    "or --db postgresql://USER@HOST/DATABASE (docs/team.md)"
)


class DatabaseError(SubrosaError):
    """The database cannot be opened, created or migrated (subrosa.db re-exports it)."""


class DatabaseUnreadable(InvalidInput):
    """The database file is not a readable subrosa database (empty, not SQLite, damaged):
    one sentence naming it, and what to do."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(
            f"{path}: not a readable subrosa database ({reason}); move it aside and run "
            "the command again: a new database is made, `subrosa rebuild` recreates a "
            "memory dir's facts from its files, and `subrosa ingest --all-projects` "
            "archives again the transcripts that still exist."
        )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every error it wraps (SQLAlchemy's `orig`, `__cause__`, `__context__`),
    each once."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        todo += [orig if isinstance(orig, BaseException) else None]
        todo += [current.__cause__, current.__context__]


def corruption(exc: BaseException) -> str | None:
    """What SQLite said when `exc` (or an error it wraps, e.g. SQLAlchemy's) means the
    database file is damaged or is no database; None for any other error (a lock, a
    full disk, a bug)."""
    import sqlite3

    for current in _chain(exc):
        # SQLITE_CORRUPT and SQLITE_NOTADB come as the base class itself; locks, full
        # disks and constraint errors as its subclasses.
        if type(current) is sqlite3.DatabaseError:
            return str(current) or "damaged"
        if isinstance(current, sqlite3.Error) and (
            "malformed" in str(current) or "not a database" in str(current)
        ):
            return str(current)
    return None


def busy(exc: BaseException) -> bool:
    """Whether `exc` (or an error it wraps) is SQLite's "database is locked": another
    connection held a write transaction for all of the busy timeout."""
    import sqlite3

    return any(
        isinstance(current, sqlite3.OperationalError) and "database is locked" in str(current)
        for current in _chain(exc)
    )


def denied(exc: BaseException) -> str | None:
    """What the server said when `exc` (or an error it wraps, e.g. SQLAlchemy's) is a
    PostgreSQL permission error (SQLSTATE 42501: the role lacks a grant, or is not the
    table's owner); None for any other error."""
    for current in _chain(exc):
        if getattr(current, "sqlstate", None) == "42501":
            lines = str(current).strip().splitlines()
            return lines[0] if lines else "permission denied"
    return None


# A statement the server cut short: a timeout set in the URL's options or on the role
# (statement_timeout and a cancel, 57014; lock_timeout, 55P03;
# idle_in_transaction_session_timeout, 25P03) or an administrator's
# pg_terminate_backend (57P01).
CUT_SHORT = frozenset({"57014", "55P03", "25P03", "57P01"})


def cut_short(exc: BaseException) -> str | None:
    """What the server said when `exc` (or an error it wraps) is a statement it cut
    short (CUT_SHORT); None for any other error."""
    for current in _chain(exc):
        if getattr(current, "sqlstate", None) in CUT_SHORT:
            lines = str(current).strip().splitlines()
            return lines[0] if lines else "canceling statement"
    return None


def cut_short_sentence(where: str, reason: str) -> str:
    """The one sentence for a statement the server cut short (cut_short())."""
    return (
        f"{where}: the server cut the command short ({reason}): what it had committed "
        "stays, the rest was rolled back; run it again (a statement_timeout or "
        "lock_timeout set in the URL's options or on the database role may be too short)."
    )


def pooled_statement(exc: BaseException) -> str | None:
    """What the server said when `exc` (or an error it wraps) is a named prepared
    statement that the server connection does not know, or knows already (SQLSTATE
    26000, 42P05): a connection pooler in transaction mode that subrosa.pg.behind_pooler()
    did not recognise hands each statement to another server connection (docs/team.md,
    "Behind a connection pooler"); None for any other error."""
    for current in _chain(exc):
        if getattr(current, "sqlstate", None) in ("26000", "42P05"):
            lines = str(current).strip().splitlines()
            return lines[0] if lines else "a prepared statement"
    return None


class ReadOnlyRole(SubrosaError):
    """The server's role may read the archive but not write it (docs/team.md, roles)."""


class LockTimeout(SubrosaError):
    """Another subrosa process held the lock for too long."""
