"""CJK runs apart only by spaces are one run in the terms column.

The terms column holds a message's CJK characters one per token, each run of them
kept apart from the next (`zzcjkbreak`), so that a CJK query, a phrase of single
characters, never matches across two runs. Korean writes a space between words, and
where is a matter of habit: "두 번" and "두번", "할 수" and "할수". A query typed
without the space found nothing in a text written with it on SQLite, and on
PostgreSQL found it only when each side of the space was one character (the words
column's text part holds such a character as a word of its own): the two engines
disagreed. subrosa.cjk.cjk_index_text now joins runs that only spaces keep apart on
one line (punctuation, other letters, digits and line ends still break them); new
messages get it at ingest. This revision recomputes the terms of the messages
archived before.

Only a message whose terms hold two runs can change, and a `zzcjkbreak` keeps them
apart: the database finds those (`LIKE`), a chunk of ids at a time; Python computes
their terms again (subrosa.terms.index_terms, the
function ingest calls) and writes the rows whose terms changed (a message with two
runs on one line apart by a space). The index follows each write: on SQLite the
update trigger replaces the row's entry in messages_fts, on PostgreSQL the server
recomputes the stored `words` column. On SQLite the index is then merged into one
segment ('optimize': the rewritten rows' delete entries slowed every search of their
words, 7 s at 1 GB). It runs in the migration's transaction (a kill
rolls it back whole; the next command runs it again) and reports to the caller's
re-index bar in message ids.

The downgrade leaves the joined runs: an older subrosa's queries find them as
before, or more.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

CHUNK = 2000  # candidate messages read at a time


def upgrade() -> None:
    from subrosa.terms import index_terms

    bind = op.get_bind()
    config = op.get_context().config
    progress = None if config is None else config.attributes.get("progress")
    first, last = bind.execute(sa.text("SELECT min(id), max(id) FROM messages")).one()
    if first is None:
        return
    total, scanned = int(last) - int(first) + 1, int(first) - 1
    # Only terms holding two runs can change, and a break keeps them apart.
    select = sa.text(
        "SELECT id, text, terms FROM messages WHERE id > :after"
        " AND terms LIKE '%zzcjkbreak%' ORDER BY id LIMIT :chunk"
    )
    update = sa.text("UPDATE messages SET terms = :terms WHERE id = :id")
    after = -1
    rewritten = 0
    while True:
        rows = bind.execute(select, {"after": after, "chunk": CHUNK}).all()
        if not rows:
            break
        changed = []
        for rowid, text, terms in rows:
            fresh = index_terms(str(text))
            if fresh != terms:
                changed.append({"id": rowid, "terms": fresh})
        if changed:
            bind.execute(update, changed)
            rewritten += len(changed)
        after = int(rows[-1][0])
        if progress is not None:
            progress(after - scanned, total)
            scanned = after
    if rewritten and bind.dialect.name == "sqlite":
        # Each row rewritten left a delete entry and a new one for every one of its
        # tokens in new segments; searches then read them beside the old ones for
        # every word those rows hold (at 1 GB, 20,769 rows: a Korean query's time
        # 18 -> 29 ms in-process, `postgres` 12 -> 18 ms). Merging into one segment
        # drops them: 7 s at 1 GB, once.
        bind.execute(sa.text("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')"))
    if progress is not None and scanned < int(last):
        progress(int(last) - scanned, total)


def downgrade() -> None:
    pass
