"""Search on a server walks the newest ids for a phrase of common words (`"in the"`)
and answers exactly as the range indexes do: the same ids, the same count, the same
last id, the same rows, the same results from `subrosa search`
(subrosa.archive.pgsearch._walk_newest())."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Db, RunCli
from tests.test_archive import _record, _transcript

pytestmark = pytest.mark.engines("postgresql")

SEQUENCE = "SELECT setval(pg_get_serial_sequence('messages', 'id'), ?)"


def _fill(db: Db, run: RunCli) -> None:
    """Three sessions, the ids of each far past the last's (the same id range, so the
    walk's floor falls inside it): every message holds `in` and `the`, most as the
    phrase `in the`, some only as `the in`, some apart."""
    from subrosa.archive.pgstore import open_server

    texts = [
        "deploy it in the cluster",
        "the in tray is full",
        "the build failed in staging",
        "look in the logs, then the in box",
        "in the morning",
        "the answer in short",
    ]
    for k in range(3):
        records = [
            _record(f"w{k}-{i}", f"{texts[i % len(texts)]} step{k}x{i}", session=f"s-{k}")
            for i in range(12)
        ]
        _transcript(f"s-{k}.jsonl", *records)
        run("ingest")
        with open_server(db.url) as conn:
            conn.execute(SEQUENCE, [(k + 1) * 1000])
    with open_server(db.url) as conn:
        conn.execute("ANALYZE messages")


QUERIES = ["('in' <-> 'the')", "('the' <-> 'in')", "('the' <-> 'in' <-> 'the')", "('in' <-> 'in')"]


def test_the_walk_answers_as_the_range_indexes_do(
    memory_dir: Any, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subrosa.archive import pgsearch
    from subrosa.archive.pgstore import open_server

    _fill(db, run)
    with open_server(db.url) as conn:
        newest = pgsearch.newest_id(conn)
        assert conn.common and min(conn.common["in"], conn.common["the"]) > 0.9
        every = {
            row[0]: tuple(row)
            for row in conn.execute("SELECT id, text, terms, role FROM messages ORDER BY id DESC")
        }
        # Spans from a few ids (most matches below the walk: the range indexes find
        # them, counted on from the walk's) to the whole archive.
        for span in (0.01, 0.2, 2.5, 100.0):
            monkeypatch.setattr(pgsearch, "WALK_SPAN", span)
            for selective in (3, 10, 20, 200):
                monkeypatch.setattr(pgsearch, "SELECTIVE", selective)
                for query in QUERIES:
                    # target: a phrase counted to fewer than SELECTIVE (pgsearch._target())
                    for keep, target in ((2, None), (5, None), (100, None), (5, 2), (100, 7)):
                        expected_rows: list[Any] = []
                        expected = pgsearch._newest_by_range(
                            conn, query, newest, 0, keep, rows=expected_rows, target=target
                        )
                        walked_rows: list[Any] = []
                        walked = pgsearch._walk_newest(
                            conn, query, newest, keep, walked_rows, target
                        )
                        case = (query, span, selective, keep, target)
                        assert walked == expected, case
                        assert walked_rows == expected_rows, case
                        assert walked_rows == [every[rowid] for rowid in walked[0]], case
                        again = pgsearch._walk_newest(conn, query, newest, keep, None, target)
                        assert again == walked, case
                        if target is not None:  # counted to the target, not past it
                            assert walked[1] <= target, case
        # A unit with a word in few messages, or of single words (the index's matches
        # need no test of a row's vector), is left to the indexes.
        assert pgsearch._walk_newest(conn, "'the'", newest, 5, None) is None
        assert pgsearch._walk_newest(conn, "('the' | 'in')", newest, 5, None) is None
        assert pgsearch._walk_newest(conn, "('in' <-> 'the' <-> 'logs')", newest, 5, None) is None
        assert pgsearch._walk_newest(conn, "('in' <-> 'step0x1')", newest, 5, None) is None
        assert pgsearch._walk_newest(conn, "'nowhere'", newest, 5, None) is None


def test_search_finds_the_same_walking_and_not(
    memory_dir: Any, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subrosa.archive import pgsearch

    _fill(db, run)
    queries = [['"in the"'], ['"the in"'], ['"in the"', "logs"], ["the", '"the in"']]
    monkeypatch.setattr(pgsearch, "SELECTIVE", 5)  # fewer than the matches: the walk stops
    walked = [json.loads(run("search", *q, "--json").stdout) for q in queries]
    monkeypatch.setattr(pgsearch, "_walk_newest", lambda *args: None)
    indexed = [json.loads(run("search", *q, "--json").stdout) for q in queries]
    assert walked == indexed
    assert all(walked)
