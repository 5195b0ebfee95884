"""On a server, each message's `words` vector stays in its row (migration 0019, storage
MAIN): a walk or a bitmap's recheck reads it without a TOAST lookup, where the column's
default storage sent a large vector (a tool output's) to the TOAST table (the walks'
figures: docs/team.md, "Where a walk's time goes")."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import Db, RunCli
from tests.test_archive import _record, _transcript
from tests.test_postings_store import _plain

pytestmark = pytest.mark.engines("postgresql")

STORAGE = (
    "SELECT attstorage FROM pg_attribute WHERE attrelid = 'messages'::regclass"
    " AND attname = 'words'"
)


def _storage(url: str) -> Any:
    with psycopg.connect(_plain(url), autocommit=True) as conn:
        row = conn.execute(STORAGE).fetchone()
        assert row is not None
        return row[0]


def _long_message(uuid: str, seed: int) -> str:
    """A message of ~400 distinct made-up words (~3.6 KB of text, a larger vector):
    over the TOAST threshold, and hardly compressible."""
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(400)]
    return _record(uuid, " ".join(words), session=f"s-{uuid}")


def test_the_vector_is_kept_in_the_row_from_this_migration_on(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    """MAIN: what PostgreSQL moves out of a row last, after the text and terms (its
    documented storage); rows written before keep theirs, and every row is found."""
    _transcript("first.jsonl", _long_message("first", 1))
    run("ingest")
    assert _storage(db.url) == "m"
    db.migrate("0018", down=True)
    assert _storage(db.url) == "x"  # the column's default
    _transcript("second.jsonl", _long_message("second", 2))
    run("ingest")
    db.migrate("0019")
    assert _storage(db.url) == "m"
    _transcript("third.jsonl", _long_message("third", 3))
    run("ingest")
    for uuid in ("first", "second", "third"):
        found = json.loads(run("search", "--json", "--transcripts", _word_of(uuid)).stdout)
        assert [r["uuid"] for r in found] == [uuid]


def _word_of(uuid: str) -> str:
    seed = {"first": 1, "second": 2, "third": 3}[uuid]
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_lowercase, k=8))
