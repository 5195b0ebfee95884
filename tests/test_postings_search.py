"""Search on a server reads a word's newest matches from the sealed chunks' postings
(subrosa.archive.pgpostings; docs/team.md, "Round eleven"), and answers exactly as the
GIN index does: the same ids, the same count, the same last id, the same rows, the same
results from `subrosa search`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Db, RunCli
from tests.test_archive import _record, _transcript

pytestmark = pytest.mark.engines("postgresql")

SEQUENCE = "SELECT setval(pg_get_serial_sequence('messages', 'id'), ?)"
CHUNKS = 5


def _fill(db: Db, run: RunCli) -> None:
    """Five chunks of ids, each holding a session: `deploy` in every message, `again` in
    some, `postgres` and `postgre` (one unit's two forms) in others; the chunks below
    the newest sealed."""
    from subrosa.archive.pgpostings import CHUNK
    from subrosa.archive.pgstore import open_server

    for k in range(CHUNKS):
        records = []
        for i in range(9):
            words = ["deploy", f"step{k}x{i}"]
            words += ["again"] if i % 3 == 0 else []
            words += ["postgres"] if i % 4 == 1 else ["postgre"] if i % 4 == 2 else []
            records.append(_record(f"m{k}-{i}", " ".join(words), session=f"s-{k}"))
        _transcript(f"s-{k}.jsonl", *records)
        run("ingest")
        with open_server(db.url) as conn:
            conn.execute(SEQUENCE, [(k + 1) * CHUNK + 10])
    with open_server(db.url) as conn:
        conn.execute("SELECT subrosa_seal_chunk(c) FROM generate_series(0, ?) c", [CHUNKS - 2])
        conn.execute("ANALYZE messages")


QUERIES = ["'deploy'", "'again'", "('postgres' | 'postgre')", "'postgre'", "'nowhere'"]


def test_the_postings_answer_as_the_index_does(
    memory_dir: Any, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subrosa.archive import pgsearch
    from subrosa.archive.pgpostings import CHUNK
    from subrosa.archive.pgstore import open_server
    from subrosa.archive.search import SELECTIVE

    _fill(db, run)
    with open_server(db.url) as conn:
        newest = pgsearch.newest_id(conn)
        assert conn.sealed == (CHUNKS - 1) * CHUNK  # the ids below are in the postings
        assert newest // CHUNK == CHUNKS - 1
        # A word the statistics put in most messages, its SELECTIVE newest matches past
        # the sealed chunks: the index reads them.
        assert conn.common and conn.common["deploy"] > 0.9
        monkeypatch.setattr(pgsearch, "SELECTIVE", 10)
        assert pgsearch._from_postings(conn, "'deploy'", newest, 100) is None
        monkeypatch.setattr(pgsearch, "TAIL_SHARE", 1e9)  # the postings answer all below
        for selective in (3, 10, 20, SELECTIVE):
            monkeypatch.setattr(pgsearch, "SELECTIVE", selective)
            for query in QUERIES:
                for keep in (2, 5, 100):
                    expected = pgsearch._newest_by_range(conn, query, newest, 0, keep)
                    assert pgsearch._from_postings(conn, query, newest, keep) == expected, (
                        query,
                        selective,
                        keep,
                    )
        monkeypatch.setattr(pgsearch, "SELECTIVE", SELECTIVE)
        # What only the index answers: a phrase, a prefix.
        for query in ("('deploy' <-> 'again')", "'dep':*", "('again' | 'dep':*)"):
            assert pgsearch._from_postings(conn, query, newest, 100) is None
        # A probe asked for its candidates' rows gets them, newest first.
        every = {
            row[0]: tuple(row)
            for row in conn.execute("SELECT id, text, terms, role FROM messages ORDER BY id DESC")
        }
        conn.answers.clear()
        pgsearch.texts_ahead(conn, True)
        count, kth = pgsearch._probe_by_range(conn, "'again'", newest)
        ids = conn.answers[("ids", "'again'")]
        assert (count, kth) == (len(ids), ids[-1]) and count == 3 * CHUNKS
        assert conn.answers[("rows", "'again'")] == [every[rowid] for rowid in ids]

        # Another writer changes a message of a sealed chunk: the chunk is unsealed in
        # its transaction, and a search that read the chunks sealed before asks the
        # index instead; the next search reads the chunks sealed up to that one.
        with open_server(db.url) as other:
            other.execute(
                "UPDATE messages SET text = text || ' again' WHERE id = ?",
                [min(rowid for rowid in every if rowid // CHUNK == 1)],
            )
        assert pgsearch._from_postings(conn, "'again'", newest, 100) is None
        newest = pgsearch.newest_id(conn)
        assert conn.sealed == CHUNK
        for query in QUERIES:
            expected = pgsearch._newest_by_range(conn, query, newest, 0, 100)
            assert pgsearch._from_postings(conn, query, newest, 100) == expected
        # Too many ids past the sealed chunks: the index answers.
        monkeypatch.setattr(pgsearch, "TAIL_MAX", CHUNK)
        assert pgsearch._from_postings(conn, "'again'", newest, 100) is None
        monkeypatch.setattr(pgsearch, "TAIL_MAX", 4 * CHUNK)
        # The newest chunk sealed up to its newest message by another connection after
        # the search's first statement: the index answers; the next search reads every
        # id from the postings, and answers alike.
        with open_server(db.url) as other:
            other.execute("SELECT subrosa_seal_chunk(c) FROM generate_series(0, ?) c", [CHUNKS - 1])
        assert pgsearch._from_postings(conn, "'again'", newest, 100) is None
        newest = pgsearch.newest_id(conn)
        assert conn.sealed == newest + 1
        for query in QUERIES:
            for keep in (2, 100):
                expected = pgsearch._newest_by_range(conn, query, newest, 0, keep)
                assert pgsearch._from_postings(conn, query, newest, keep) == expected


def _idx_scans(db: Db) -> int:
    from subrosa.archive.pgstore import open_server

    with open_server(db.url) as conn:
        row = conn.execute(
            "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'postings'"
        ).fetchone()
    return int(row[0])


def test_search_finds_the_same_with_postings_and_without(
    memory_dir: Any, db: Db, run: RunCli
) -> None:
    from subrosa.archive.pgstore import open_server

    _fill(db, run)
    queries = [["deploy"], ["again"], ["postgres"], ["deploy", "again"], ["again", "nowhere"]]
    before = _idx_scans(db)
    with_postings = [json.loads(run("search", *q, "--json").stdout) for q in queries]
    assert _idx_scans(db) > before  # the probes read the postings
    with open_server(db.url) as conn:
        conn.execute("DELETE FROM sealed_chunks")
        assert conn.execute("SELECT count(*) FROM postings").fetchone()[0] > 0
    without = [json.loads(run("search", *q, "--json").stdout) for q in queries]
    assert with_postings == without
    assert all(with_postings[:3])  # each of the one-word queries finds messages


def test_which_units_the_postings_answer() -> None:
    """Units of single words only, as the vectors hold them; not a phrase, a prefix, a
    CJK run, or a word with a backslash (left to the index)."""
    from subrosa.archive.pgsearch import plain_lexemes, unit_query_of
    from subrosa.query import Alt

    assert plain_lexemes("'deploy'") == ["deploy"]
    assert plain_lexemes("('postgres' | 'postgre')") == ["postgres", "postgre"]
    assert plain_lexemes("'it''s'") == ["it's"]
    assert plain_lexemes("('pre' <-> 'commit')") is None
    assert plain_lexemes("('cache' | ('pre' <-> 'commit'))") is None
    assert plain_lexemes("'dep':*") is None
    assert plain_lexemes("'a\\\\b'") is None
    assert plain_lexemes("('東' <-> '京')") is None
    query = unit_query_of((Alt(("cost",), True), Alt(("costs",), False)))
    assert plain_lexemes(query) == ["cost", "costs"]
