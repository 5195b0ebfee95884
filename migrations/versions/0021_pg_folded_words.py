"""PostgreSQL folds diacritics in its words as SQLite's FTS5 does: `cafe` finds café.

FTS5's tokenizer (`unicode61 remove_diacritics 2`) folds a Latin letter with a diacritic
to its plain letter, in the index and in the query: `cafe` and `café` find the same
messages, `é*` is `e*`. The server's `words` column (0007: `to_tsvector('simple', …)`)
kept them, so a word or a prefix with or without a diacritic found other messages there,
and counted others (other scores for the whole query). Found on the real transcripts by
bench/sweep.py's shapes (docs/team.md, "Diacritics").

The fold is FTS5's own table (subrosa.fold: 488 letters to a plain ASCII letter,
25 combining marks dropped), in IMMUTABLE SQL functions:
- `subrosa_fold(text)`: the text with its marks dropped (FTS5 keeps a mark inside its
  word, PostgreSQL's `[:alnum:]` does not) and its letters folded, by a translate()
  given only the letters the text holds;
- `subrosa_words(text, terms)`: the vector 0007 stored, of the text and terms folded
  when a row holds a letter or mark of the table (a regular expression's test: the
  rest, most rows, pay nothing else).
`subrosa_fact_words(title, description, hook, body)` does the same for the facts' index
(0005's weighted vector, subrosa.memory.pgfacts spells the call).

PostgreSQL 15 cannot change a generated column's expression, so `words` is dropped and
added again (every row rewritten, with 0019's STORAGE MAIN in the same statement), and
with it what hangs on it: `ix_messages_words`, the id-range indexes of 0008 (those that
existed, built again), the lexicon of 0016 (emptied and filled again with the folded
words), and the postings of 0018 (emptied, their lexemes were the unfolded ones, and
sealed again by 0018's own code, with the caller's progress bar). The column's
statistics are gathered again (search plans with its most common words). The rewrite
holds the table's lock for its length (332 s for the 1 GB bench archive, 0.56x
its ingest), which searches and writers wait out.

From now on the expression is a function: a later change of the fold can replace the
function and rewrite the rows, without dropping the column. The query side folds its
words with the same table in Python (subrosa.archive.pgsearch, subrosa.memory.pgfacts).
Nothing on SQLite (FTS5 folds already).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from subrosa.fold import FROM, MARKS, TO

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# A text holding any letter or mark the fold changes (none of them is special in a
# bracket expression: they are all past ASCII).
_FOLDABLE = _literal("[" + FROM + "]")
LETTERS = FROM[: len(TO)]  # each folds to the letter at its place in TO; MARKS to nothing

# A text folded: its marks dropped (a regular expression's pass), then its letters
# translated. translate() compares each character of the text with each of the
# characters it is given, so it is given only the letters the text holds (found by a
# regular expression, a handful in a French or German text), not the table's 488.
FOLD = (
    "CREATE OR REPLACE FUNCTION subrosa_fold(text) RETURNS text"
    " LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$"
    " SELECT CASE WHEN h.letters IS NULL THEN u.t"
    f" ELSE translate(u.t, h.letters, translate(h.letters, {_literal(LETTERS)}, {_literal(TO)}))"
    f" END FROM (SELECT regexp_replace($1, {_literal('[' + MARKS + ']+')}, '', 'g') AS t) u,"
    " LATERAL (SELECT string_agg(DISTINCT f.m[1], '') AS letters"
    f" FROM regexp_matches(u.t, {_literal('([' + LETTERS + '])')}, 'g') AS f (m)) h $$"
)


def _vector(text: str, terms: str) -> str:
    """0007's vector of a text and its terms."""
    return (
        f"to_tsvector('simple'::regconfig, regexp_replace({text}, '[^[:alnum:]]+', ' ', 'g'))"
        f" || to_tsvector('simple'::regconfig, {terms})"
    )


_TEXT, _TERMS = "left($1, 250000)", "left(coalesce($2, ''), 250000)"


# The two functions a column and an index compute name subrosa_fold() with its schema:
# a function's body is resolved when it runs, under the caller's search_path, and
# pg_dump restores with an empty one. (Everything else they call is pg_catalog's.)
def words(schema: str) -> str:
    """The statement making subrosa_words(text, terms) in `schema` (quoted): a row
    holding no letter or mark of the table (most rows: one regular expression's test)
    gets 0007's vector, another the vector of its text and terms folded."""
    fold = schema + ".subrosa_fold({})"
    return (
        "CREATE OR REPLACE FUNCTION subrosa_words(text, text) RETURNS tsvector"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE"
        f" WHEN {_TEXT} ~ {_FOLDABLE} OR {_TERMS} ~ {_FOLDABLE}"
        f" THEN {_vector(fold.format(_TEXT), fold.format(_TERMS))}"
        f" ELSE {_vector(_TEXT, _TERMS)} END $$"
    )


_WEIGHTS = (("$1", "A"), ("$2", "B"), ("$3", "B"), ("$4", "D"))


def _fact_vector(field: str) -> str:
    return " || ".join(
        f"setweight(to_tsvector('simple'::regconfig,"
        f" regexp_replace({field.format(c)}, '[^[:alnum:]]+', ' ', 'g')), '{w}')"
        for c, w in _WEIGHTS
    )


def fact_words(schema: str) -> str:
    """The statement making subrosa_fact_words(title, description, hook, body)."""
    return (
        "CREATE OR REPLACE FUNCTION subrosa_fact_words(text, text, text, text)"
        " RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE"
        f" WHEN ($1 || $2 || $3 || $4) ~ {_FOLDABLE}"
        f" THEN {_fact_vector(schema + '.subrosa_fold({})')}"
        f" ELSE {_fact_vector('{}')} END $$"
    )


def schema_of(bind: sa.Connection) -> str:
    """The schema the migration makes its objects in, quoted."""
    name = str(bind.execute(sa.text("SELECT current_schema()")).scalar())
    return '"' + name.replace('"', '""') + '"'


# 0005's facts index, as it was.
OLD_FACTS = (
    "CREATE INDEX ix_facts_words ON facts USING gin (("
    + " || ".join(
        f"setweight(to_tsvector('simple'::regconfig,"
        f" regexp_replace({c}, '[^[:alnum:]]+', ' ', 'g')), '{w}')"
        for c, w in (("title", "A"), ("description", "B"), ("hook", "B"), ("body", "D"))
    )
    + "))"
)
NEW_FACTS = (
    "CREATE INDEX ix_facts_words ON facts USING gin"
    " ((subrosa_fact_words(title, description, hook, body)))"
)

# 0007's expression, word for word.
OLD_WORDS = (
    "to_tsvector('simple'::regconfig,"
    " regexp_replace(left(text, 250000), '[^[:alnum:]]+', ' ', 'g'))"
    " || to_tsvector('simple'::regconfig, left(coalesce(terms, ''), 250000))"
)
NEW_WORDS = "subrosa_words(text, terms)"

# 0016's statement filling the lexicon from every message.
FILL_LEXICON = (
    "INSERT INTO lexicon (term) SELECT DISTINCT w.term"
    " FROM messages m, unnest(tsvector_to_array(m.words)) AS w(term)"
    " ORDER BY 1 ON CONFLICT DO NOTHING"
)
RANGE_NAME = "ix_messages_words_r"


def _rewrite(expression: str) -> None:
    """`words` dropped and added again as `expression`, and what hangs on it."""
    bind = op.get_bind()
    ranges = list(
        bind.execute(
            sa.text(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                " AND tablename = 'messages' AND indexname LIKE 'ix\\_messages\\_words\\_r%'"
            )
        )
    )
    # The postings' lexemes are the old vectors': none is kept (0018 asks a migration
    # that changes the expression to empty both tables; the triggers see no rewrite),
    # and they are sealed again below.
    op.execute("LOCK TABLE postings, sealed_chunks IN EXCLUSIVE MODE")
    op.execute("DELETE FROM postings")
    op.execute("DELETE FROM sealed_chunks")
    op.execute("DROP INDEX IF EXISTS ix_messages_words")
    op.execute("ALTER TABLE messages DROP COLUMN words")  # its range indexes with it
    op.execute(
        f"ALTER TABLE messages ADD COLUMN words tsvector GENERATED ALWAYS AS ({expression})"
        " STORED, ALTER COLUMN words SET STORAGE MAIN"
    )
    op.execute("CREATE INDEX ix_messages_words ON messages USING gin (words)")
    for _, definition in ranges:
        op.execute(definition)
    op.execute("DELETE FROM lexicon")
    op.execute(FILL_LEXICON)
    # Sealed again as 0018 sealed an archive: every complete chunk, then the newest in
    # part, telling the caller's progress bar (its own code, not a copy of it).
    context.script.get_revision("0018").module._seal_complete(bind)
    op.execute("ANALYZE messages (words)")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    schema = schema_of(op.get_bind())
    op.execute(FOLD)
    op.execute(words(schema))
    op.execute(fact_words(schema))
    _rewrite(NEW_WORDS)
    op.execute("DROP INDEX IF EXISTS ix_facts_words")
    op.execute(NEW_FACTS)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _rewrite(OLD_WORDS)
    op.execute("DROP INDEX IF EXISTS ix_facts_words")
    op.execute(OLD_FACTS)
    op.execute("DROP FUNCTION IF EXISTS subrosa_fact_words(text, text, text, text)")
    op.execute("DROP FUNCTION IF EXISTS subrosa_words(text, text)")
    op.execute("DROP FUNCTION IF EXISTS subrosa_fold(text)")
