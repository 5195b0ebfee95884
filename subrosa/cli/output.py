"""What every entry prints with: result lines, warnings, notes, one JSON document, and
an error as one sentence with its exit code. Standard library only.

The click commands and the fast paths that answer without click
(subrosa.cli.fastsearch, subrosa.cli.fastpath) print through these same functions, so
the two ways into a command cannot print differently. Plain writes, not rich: rich
cost ~50 ms of CPU to import, for lines that need no layout. User text is printed as
it is (no markup, no emoji codes); the few control characters a terminal would act on
are left out of result lines, and errors and warnings show every control character
as an escape (subrosa.text.printable).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

# What rich left out of a result line: a bell, a backspace, vertical tab, form feed and
# carriage return would move the cursor or ring rather than print.
_CURSOR_CONTROLS = str.maketrans(dict.fromkeys("\a\b\v\f\r"))


def _colour(stream: Any) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def say(message: str) -> None:
    """A result line on stdout, markup-free so user text is printed as is."""
    sys.stdout.write(message.translate(_CURSOR_CONTROLS) + "\n")


def note(message: str) -> None:
    """A progress or status line for people, on stderr (stdout is for results)."""
    sys.stderr.write(message.translate(_CURSOR_CONTROLS) + "\n")


def warn(message: str) -> None:
    """A warning on stderr: `warning: …` (yellow on a terminal)."""
    from subrosa.text import printable

    label = "\x1b[33mwarning:\x1b[0m" if _colour(sys.stderr) else "warning:"
    sys.stderr.write(f"{label} {printable(message)}\n")


def print_json(value: Any) -> None:
    """Print exactly one JSON document on stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def error_of(exc: BaseException, db_url: Callable[[], str] | None = None) -> tuple[str, int] | None:
    """An exception as the one sentence and exit code the user sees, or None when it is
    not one of ours (a bug: its traceback is shown). PRODUCT.md: 1 a problem found,
    2 invalid input. `db_url` names the command's database: an SQLite file damaged in
    the middle (SQLite finds it only when it reads that page) gets the same sentence as
    a file refused on opening, never a traceback."""
    from subrosa.errors import SubrosaError

    if isinstance(exc, SubrosaError):
        return str(exc), exc.exit_code
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}.", 1
    if isinstance(exc, UnicodeEncodeError):
        # An argument, variable or file name made of bytes that are not UTF-8 (Python
        # carries them as surrogates, which no file or database takes).
        shown = exc.object if isinstance(exc.object, str) else repr(exc.object)
        return f"{shown[:200]}: is not valid UTF-8 text.", 2
    if isinstance(exc, Exception):
        from subrosa.errors import (
            cut_short,
            cut_short_sentence,
            denied,
            hide_passwords,
            pooled_statement,
        )

        statement = pooled_statement(exc)
        if statement is not None:
            where = hide_passwords(db_url()) if db_url is not None else "the server"
            return (
                f"{where}: the server answered `{statement}`: a connection pooler in "
                "transaction mode that subrosa does not recognise stands between; declare "
                "it by adding subrosa_pooler=transaction to the URL's parameters, or use the "
                "pooler's session mode or a direct URL (docs/team.md, \"Behind a connection "
                'pooler").',
                1,
            )
        reason = cut_short(exc)
        if reason is not None:  # a timeout the URL or the role set, an admin's cancel
            where = hide_passwords(db_url()) if db_url is not None else "the server"
            return cut_short_sentence(where, reason), 1
        reason = denied(exc)
        if reason is not None:  # a team server's role without a grant (docs/team.md)
            where = hide_passwords(db_url()) if db_url is not None else "the server"
            return (
                f"{where}: the server refused ({reason}): this database role may not do "
                'what the command needs; docs/team.md ("Security") says which role may '
                "do what.",
                1,
            )
    if db_url is not None and isinstance(exc, Exception):
        from subrosa.errors import DatabaseUnreadable, corruption

        damage = corruption(exc)
        if damage is not None:
            from subrosa.paths import sqlite_path

            url = db_url()
            return str(DatabaseUnreadable(sqlite_path(url) or url, damage)), 2
    if isinstance(exc, Exception):
        from subrosa.errors import busy

        if busy(exc):
            return _locked(db_url() if db_url is not None else None), 1
    return None


def _locked(url: str | None) -> str:
    """The sentence for an SQLite file another connection kept locked past the busy
    timeout (a `sqlite3` shell or a backup tool in a transaction, a long write)."""
    from subrosa.paths import sqlite_path
    from subrosa.schema import BUSY_TIMEOUT_MS

    where = (sqlite_path(url) or url) if url is not None else "the database"
    return (
        f"{where}: another program kept the database locked for {BUSY_TIMEOUT_MS / 1000:g} s "
        "(database is locked); run the command again once it has finished."
    )


def show_error(message: str) -> None:
    """An error sentence on stderr, as click shows its own."""
    from subrosa.text import printable

    sys.stderr.write(f"Error: {printable(message)}\n")
