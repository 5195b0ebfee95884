"""PostgreSQL's full-text indexes cut words as SQLite's unicode61 does.

Migration 0002 indexed `to_tsvector('simple', text)`: PostgreSQL's parser, which keeps
`search.py` one token (a host name), `foo@bar.com` one (an e-mail), `/usr/lib` one (a
path), where FTS5's unicode61 and subrosa's query terms (subrosa.terms.WORD) see
`search`, `py`, `foo`, `bar`, `com`, `usr`, `lib`. Searches on the two engines would
find different messages. The expressions here replace every run of characters that
are not letters or digits by a space first, so the parser sees only words and cuts
them where unicode61 does; the archive's vector is the text's words followed by the
terms column's (CJK characters, camelCase parts), one index for both, so that a query
whose words are in either column is one index search (FTS5 matches both columns).

`left(…, 250000)`: a tsvector holds at most 1 MB, and a message too long for it would
fail its insert; 250,000 characters of distinct words stay under it. What is past that
point of a huge pasted text is not found on PostgreSQL (FTS5 indexes it all).

These expressions are the contract with subrosa.archive.pgsearch and
subrosa.memory.pgfacts: PostgreSQL uses an expression index only for a query that
spells the same expression. On SQLite this revision changes nothing.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


# The words of a text: runs of letters and digits (what unicode61 keeps), one space between.
def _words(column: str) -> str:
    return f"regexp_replace({column}, '[^[:alnum:]]+', ' ', 'g')"


def _facts_vector() -> str:
    weighted = [("title", "A"), ("description", "B"), ("hook", "B"), ("body", "D")]
    return " || ".join(
        f"setweight(to_tsvector('simple'::regconfig, {_words(c)}), '{w}')" for c, w in weighted
    )


UPGRADE = [
    # PostgreSQL's own indexes, kept in step by the server: never re-indexed by subrosa.
    "DELETE FROM archive_reindex",
    "DROP INDEX IF EXISTS ix_messages_text_tsv",
    "DROP INDEX IF EXISTS ix_messages_terms_tsv",
    "DROP INDEX IF EXISTS ix_facts_tsv",
    "CREATE INDEX ix_messages_words ON messages USING gin (("
    f"to_tsvector('simple'::regconfig, {_words('left(text, 250000)')})"
    " || to_tsvector('simple'::regconfig, left(coalesce(terms, ''), 250000))))",
    f"CREATE INDEX ix_facts_words ON facts USING gin (({_facts_vector()}))",
]

DOWNGRADE = [
    "DROP INDEX IF EXISTS ix_messages_words",
    "DROP INDEX IF EXISTS ix_facts_words",
    """CREATE INDEX ix_messages_text_tsv ON messages
        USING gin (to_tsvector('simple'::regconfig, text))""",
    """CREATE INDEX ix_messages_terms_tsv ON messages
        USING gin (to_tsvector('simple'::regconfig, terms)) WHERE terms IS NOT NULL""",
    """CREATE INDEX ix_facts_tsv ON facts USING gin ((
        setweight(to_tsvector('simple'::regconfig, title), 'A')
        || setweight(to_tsvector('simple'::regconfig, description), 'B')
        || setweight(to_tsvector('simple'::regconfig, hook), 'B')
        || setweight(to_tsvector('simple'::regconfig, body), 'D')))""",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
