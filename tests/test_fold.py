"""Diacritics folded on a server as FTS5 folds them (subrosa.fold, migration 0021): the
table is FTS5's own, and the migration folds an archive stored before it."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from pathlib import Path

import pytest

from subrosa.fold import FROM, MARKS, TO, fold
from tests.conftest import Db, RunCli, write_leaf
from tests.test_archive import _record, _transcript
from tests.test_postings_store import _in_part, _sealed, _sql


def _fts5_tokens(remove_diacritics: int, texts: list[str]) -> dict[int, list[str]]:
    """Each text's tokens as messages_fts's tokenizer cuts them (subrosa.schema), with
    `remove_diacritics` as given."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(t,"
        f" tokenize='unicode61 remove_diacritics {remove_diacritics}')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
    conn.executemany("INSERT INTO f (rowid, t) VALUES (?, ?)", enumerate(texts))
    tokens: dict[int, list[str]] = {}
    for term, doc in conn.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        tokens.setdefault(doc, []).append(term)
    conn.close()
    return tokens


def test_the_fold_table_is_fts5s_own() -> None:
    """Every character (past ASCII, in the planes FTS5's tables cover) whose token
    differs between remove_diacritics 0 and 2 is in the table, folded to what FTS5
    gives; nothing else is."""
    chars = [
        chr(c)
        for c in range(0x80, 0x30000)
        if unicodedata.category(chr(c)) not in ("Cs", "Co", "Cn")
    ]
    texts = [f"q{c}q" for c in chars]
    kept, folded = _fts5_tokens(0, texts), _fts5_tokens(2, texts)
    expected = {
        chars[i]: folded[i][0][1:-1] for i in range(len(chars)) if kept.get(i) != folded.get(i)
    }
    table = dict(zip(FROM[: len(TO)], TO, strict=True)) | dict.fromkeys(MARKS, "")
    assert len(FROM) == len(TO) + len(MARKS) == len(table)
    assert table == expected
    assert all(len(v) == 1 and v.isascii() for v in TO)


def test_a_word_folds_as_fts5_folds_it() -> None:
    words = ["Élan", "über", "cafe\u0301", "straße", "smørrebrød", "Łódź", "naïveCoder", "ａｂ"]
    folded = _fts5_tokens(2, words)
    assert [fold(w.lower()) for w in words] == [folded[i][0] for i in range(len(words))]
    assert fold("plain ascii") == "plain ascii"


@pytest.mark.engines("postgresql")
def test_the_migration_folds_an_archive_stored_before_it(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    """An archive and facts at 0020 (their words as written: the downgrade gives them
    back) are folded by 0021: `cafe` finds café, the lexicon holds the folded words, the
    id-range indexes are built again, the postings sealed again from the folded words,
    the vector kept in its row (0019)."""
    _transcript(
        "s.jsonl",
        _record("m1", "the café on the corner", timestamp="2026-03-01T10:00:00Z"),
        _record("m2", "the cafe menu", timestamp="2026-03-01T10:01:00Z"),
        _record("m3", "Größe über alles", timestamp="2026-03-01T10:02:00Z"),
    )
    write_leaf(memory_dir, "dessert.md", "Crème brûlée for the team.")
    run("generate")
    run("ingest")

    def found(*query: str) -> set[str]:
        answer = json.loads(run("search", "--json", "--all-projects", *query).stdout)
        return {r.get("uuid") or r.get("slug") for r in answer}

    ranges = "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'ix\\_messages\\_words\\_r%'"
    built = _sql(db.url, ranges)
    terms = "SELECT term FROM lexicon WHERE term IN ('café', 'cafe', 'über', 'uber') ORDER BY 1"
    unfolded = "SELECT count(*) FROM messages WHERE words @@ 'café'::tsquery"
    db.migrate("0020", down=True)  # (the CLI would take it back to the head first)
    assert _sql(db.url, terms) == [("cafe",), ("café",), ("über",)]  # as written
    assert _sql(db.url, unfolded) == [(1,)]
    assert _sealed(db.url) == []
    db.migrate("0021")
    assert found("cafe", "--transcripts") == {"m1", "m2"}
    assert found("uber", "--transcripts") == {"m3"}
    assert found("creme", "--facts") == {"dessert"}
    assert _sql(db.url, terms) == [("cafe",), ("uber",)]
    assert _sql(db.url, ranges) == built
    storage = "SELECT attstorage FROM pg_attribute WHERE attrelid = 'messages'::regclass"
    assert _sql(db.url, f"{storage} AND attname = 'words'") == [("m",)]
    assert _in_part(db.url) == {0: 4}  # sealed again, from the folded words
    assert _sql(db.url, "SELECT ids FROM postings WHERE lexeme = 'cafe'") == [([2, 1],)]
    _transcript("t.jsonl", _record("m4", "café au lait", timestamp="2026-03-01T11:00:00Z"))
    run("ingest")  # seals what it may again (0018's machinery), from the folded words
    run("db", "upgrade")
    assert _sealed(db.url) == []  # no chunk complete yet; the postings held invariant
    assert found("cafe", "--transcripts") == {"m1", "m2", "m4"}
    db.migrate("0020", down=True)
    assert _sql(db.url, terms) == [("cafe",), ("café",), ("über",)]  # as written again
    assert _sql(db.url, unfolded) == [(2,)]
    assert _sql(db.url, f"{storage} AND attname = 'words'") == [("m",)]
    made = ["subrosa_fold", "subrosa_words", "subrosa_fact_words"]
    assert _sql(db.url, "SELECT count(*) FROM pg_proc WHERE proname = ANY(%s)", [made]) == [(0,)]


@pytest.mark.engines("postgresql")
def test_the_servers_fold_is_the_tables(db: Db) -> None:
    """subrosa_fold() folds a text's letters and drops its marks as fold() does (every
    letter of the table, in both cases, and odd neighbours: quotes, backslashes, CJK,
    letters it keeps); subrosa_words() gives the folded words their own positions."""
    db.migrate("head")
    texts = [
        LETTERS_TEXT,
        "Crème brûlée, CAFÉ au lait: l'été d\\où",
        "e\u0301te\u0301 in NFD, and a lone \u0301 mark",
        "straße smørrebrød Łódź 東京 ａｂ no accents at all",
    ]
    for text in texts:
        assert _sql(db.url, "SELECT subrosa_fold(%s)", [text]) == [(fold(text),)]
    vector = "SELECT subrosa_words(%s, %s)::text"
    assert _sql(db.url, vector, ["Crème brûlée, CAFÉ", "crème"]) == [
        ("'brulee':2 'cafe':3 'creme':1,4",)
    ]
    assert _sql(db.url, vector, ["no accents", None]) == [("'accents':2 'no':1",)]


LETTERS_TEXT = " ".join(FROM[i : i + 7] for i in range(0, len(FROM), 7))


def test_a_snippet_marks_the_word_in_any_of_its_forms() -> None:
    """A snippet marks where a message matched as the index matched it: `cafe` in
    `Café`, `café` in `cafe`, a decomposed `été` whole (its marks inside the mark),
    and the text around kept as it was written."""
    from subrosa.query import Alt, snippet_pattern, text_snippet

    cafe = snippet_pattern([Alt(("cafe",), False)])
    assert text_snippet("Das CAFÉ-Menü, nicht das Café", cafe) == (
        "Das **CAFÉ**-Menü, nicht das **Café**"
    )
    assert text_snippet("a cafe here", snippet_pattern([Alt(("café",), False)])) == (
        "a **cafe** here"
    )
    ete = snippet_pattern([Alt(("été",), False)])
    decomposed = "l'e\u0301te\u0301 dernier, " + "x" * 150
    assert text_snippet(decomposed, ete).startswith("l'**e\u0301te\u0301** dernier")
    far = "y" * 200 + " the cafe\u0301 at last"
    assert text_snippet(far, cafe) == "…the **cafe\u0301** at last"


def test_search_marks_what_folding_found(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s.jsonl",
        _record("m1", "Wir sitzen im Café am Markt", timestamp="2026-03-01T10:00:00Z"),
        _record("m2", "the cafe menu", timestamp="2026-03-01T10:01:00Z"),
    )
    run("ingest")
    found = json.loads(run("search", "--json", "--all-projects", "cafe").stdout)
    assert {r["uuid"]: r["snippet"] for r in found} == {
        "m1": "Wir sitzen im **Café** am Markt",
        "m2": "the **cafe** menu",
    }
