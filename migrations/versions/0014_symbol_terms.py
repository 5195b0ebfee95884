"""Symbol words and emoji get tokens of their own in the terms column.

FTS5's unicode61 (and the words column that mimics it on PostgreSQL) indexes `C++` and
`C#` as `c` and drops emoji altogether, so `subrosa search "C++"` ranked every `-c`
flag first and `subrosa search "🚀"` found nothing. subrosa.terms.index_terms now adds
a token for each symbol word (`zzsymcpp`) and each pictograph (`zzemoji1f680`) to the
terms column (docs/search.md, "Symbol words and emoji"); new messages get them at
ingest. This revision recomputes the terms of the messages archived before.

Only a message that holds `++`, `#` or a character outside ASCII can gain a token, so
the scan for them is done by the database, in SQL (`LIKE`, and the text's length in
bytes against its length in characters), a chunk of ids at a time; Python computes
their terms again (subrosa.terms.index_terms, the function ingest calls) and writes the
rows whose terms changed. The index follows each write: on SQLite the update trigger
replaces the row's entry in messages_fts (a message a pending re-index of 0003 has not
reached yet is skipped by the trigger, and that re-index computes the same terms), on
PostgreSQL the stored `words` column is recomputed by the server.

The revision runs in the migration's transaction: a kill rolls it back whole, and the
next `subrosa db upgrade` (or any command that opens the archive) runs it again from the
start. Measured (docs/search.md): seconds for a gigabyte of archive. A command on a
terminal shows how far it is on its re-index bar (subrosa.db.upgrade's `progress`), in
message ids: the part of the archive's ids scanned so far.

The downgrade leaves the tokens: an older subrosa ignores them (its queries never ask
for them), and a message it ingests gets its own terms.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

CHUNK = 2000  # candidate messages read at a time


def _candidates(dialect: str) -> str:
    """SQL true for a message that may hold a symbol word or an emoji."""
    if dialect == "postgresql":
        beyond_ascii = "octet_length(text) <> char_length(text)"
    else:  # SQLite: length() counts characters, a blob's length is its bytes
        beyond_ascii = "length(CAST(text AS BLOB)) <> length(text)"
    return f"(text LIKE '%++%' OR text LIKE '%#%' OR {beyond_ascii})"


def upgrade() -> None:
    from subrosa.terms import index_terms

    bind = op.get_bind()
    config = op.get_context().config
    progress = None if config is None else config.attributes.get("progress")
    first, last = bind.execute(sa.text("SELECT min(id), max(id) FROM messages")).one()
    if first is None:
        return
    total, scanned = int(last) - int(first) + 1, int(first) - 1
    may_hold = _candidates(bind.dialect.name)
    select = sa.text(
        f"SELECT id, text, terms FROM messages WHERE id > :after AND {may_hold}"
        " ORDER BY id LIMIT :chunk"
    )
    update = sa.text("UPDATE messages SET terms = :terms WHERE id = :id")
    after = -1
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
        after = int(rows[-1][0])
        if progress is not None:
            progress(after - scanned, total)
            scanned = after
    if progress is not None and scanned < int(last):
        progress(int(last) - scanned, total)


def downgrade() -> None:
    pass
