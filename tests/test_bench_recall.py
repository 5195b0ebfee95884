"""The recall bench's questions are well formed and its machinery runs (bench/recall.py).

The figures themselves are the bench's job; these tests keep the instrument working while
the search it measures is rebuilt: every answer points at a message, session or leaf that
exists, and a run over the fixtures maps subrosa's results and the baseline's to locations.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO

sys.path.insert(0, str(REPO / "bench"))

import recall  # noqa: E402  (bench/recall.py, a script beside bench/_table.py)


def _questions() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in recall.QUESTION_FILES
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def _record_uuids(root: Path) -> set[str]:
    found = set()
    for directory, _subdirs, files in os.walk(root):
        for name in files:
            if name.endswith(".jsonl"):
                for line in (Path(directory) / name).read_text(errors="replace").splitlines():
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and isinstance(record.get("uuid"), str):
                        found.add(record["uuid"])
    return found


def test_questions_are_well_formed() -> None:
    questions = _questions()
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids))
    splits = {"d": 0, "h": 0}
    for q in questions:
        splits[q["id"][0]] += 1
        assert q["kind"] in recall.KINDS, q["id"]
        assert q["query"].strip() and q["answers"], q["id"]
        types = {a["type"] for a in q["answers"]}
        if q["kind"] == "fact":
            assert types == {"fact"}, q["id"]
        elif q["kind"] == "session":
            assert types == {"session"}, q["id"]
        else:
            assert types == {"message"}, q["id"]
    assert splits["d"] >= 60 and splits["h"] >= 20


def test_fixture_answers_exist() -> None:
    uuids = _record_uuids(recall.FIXTURES / "claude")
    leaves = {(p.parent.name, p.stem) for p in (recall.FIXTURES / "memory").glob("*/*.md")}
    for q in _questions():
        for answer in q["answers"]:
            if answer["type"] == "message" and q["source"] == "fixture":
                assert answer["uuid"] in uuids, q["id"]
            if answer["type"] == "fact" and answer["memory_dir"] in {d for d, _ in leaves}:
                assert (answer["memory_dir"], answer["slug"]) in leaves, q["id"]


@pytest.mark.skipif(not (CORPUS / "transcripts").is_dir(), reason="no ../shared/corpus")
def test_corpus_answers_exist() -> None:
    uuids = _record_uuids(CORPUS / "transcripts") | _record_uuids(recall.FIXTURES / "claude")
    missing = [
        (q["id"], a["uuid"])
        for q in _questions()
        for a in q["answers"]
        if a["type"] == "message" and a["uuid"] not in uuids
    ]
    assert not missing


def test_baseline_tokens_and_ranking() -> None:
    assert recall.tokenize("Deploy_it 東京タワー 웹훅") == ["deploy_it", *"東京タワー", "웹", "훅"]
    index = recall.BM25(
        [
            ({"uuid": "a"}, "the deploy failed"),
            ({"uuid": "b"}, "deploy deploy worked"),
            ({"uuid": "c"}, "東京の天気"),
        ]
    )
    assert [loc["uuid"] for loc in index.search("deploy failed")] == ["a", "b"]
    assert [loc["uuid"] for loc in index.search("京都")] == ["c"]
    assert index.search("nothing here") == []


def test_a_run_over_the_fixtures(tmp_path: Path) -> None:
    """Ingest, adopt and search through the real CLI; every location is one the archive has."""
    corpus = tmp_path / "no-corpus"
    corpus.mkdir()
    archive, messages = recall.build(corpus, tmp_path / "work")
    assert messages > 0
    chosen = [
        q
        for q in recall.load_questions(recall.QUESTION_FILES, set(recall.KINDS))
        if any(a.get("memory_dir") in {"kenji__kanban", "minji__payments"} for a in q.answers)
        or any(a.get("session_id", "").startswith(("3a8f2c61", "7b4e9d12")) for a in q.answers)
    ]
    assert chosen
    recall.run(chosen, archive)
    uuids = _record_uuids(recall.FIXTURES / "claude")
    for q in chosen:
        assert set(q.ranks) == {"subrosa", "bm25"}
        for system in ("subrosa", "bm25"):
            for shown in q.top[system]:
                assert shown.startswith(("fact ", "message ")), shown
    with archive.connect() as conn:
        results = archive.search("webhook")
        assert results
        for location in recall.locate(results, conn):
            assert location.get("slug") or location["uuid"] in uuids
