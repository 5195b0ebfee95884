"""Korean (and any CJK) words typed with or without the space between them find each
other (migration 0017), the same on both engines; runs that punctuation, other
letters or a line end keep apart still never match as one phrase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subrosa.cjk import RUN_BREAK, cjk_index_text, cjk_runs
from subrosa.schema import SCHEMA_HEAD
from subrosa.terms import index_terms
from tests.conftest import Db, RunCli
from tests.test_archive import _ingest, _record, _search, _transcript

pytestmark = pytest.mark.engines

TEXTS = {
    "twice": "토스 웹훅이 가끔 두 번 들어와서 결제가 중복으로 처리돼요.",
    "can": "이 설정으로는 배포 할 수 없어요",
    "joined": "재시도는두번만해요",
    "tokyo": "東京。大阪の順に回ります",
    "lines": "目录\n页码对不上",
    "latin": "中文 abc 日本",
}


def _archive(run: RunCli) -> None:
    _transcript(
        "s-1.jsonl", *(_record(uuid, text, session=f"s-{uuid}") for uuid, text in TEXTS.items())
    )
    _ingest(run)


def _all_words(run: RunCli, query: str) -> list[str]:
    """The messages holding every word of the query (the first tier)."""
    found: list[dict[str, Any]] = _search(run, query)
    return [str(r["uuid"]) for r in found if r["match"] == "all"]


def test_the_index_joins_runs_apart_only_by_spaces_on_one_line() -> None:
    assert cjk_index_text("가끔 두 번 들어와") == "가 끔 두 번 들 어 와"
    assert cjk_index_text("두\u3000번\t더") == "두 번 더"  # the ideographic space, a tab
    brk = RUN_BREAK.strip()
    assert cjk_index_text("東京。大阪") == f"東 京 {brk} 大 阪"
    assert cjk_index_text("目录\n页码") == f"目 录 {brk} 页 码"
    assert cjk_index_text("中文 abc 日本") == f"中 文 {brk} 日 本"
    assert cjk_index_text("中文 ") == "中 文" and cjk_index_text("abc") is None
    # Queries are cut as before: a space between two words makes two units.
    assert cjk_runs("두 번") == ["두", "번"]


def test_a_word_typed_without_its_space_finds_the_text_written_with_it(
    memory_dir: Path, run: RunCli
) -> None:
    _archive(run)
    assert sorted(_all_words(run, "두번")) == ["joined", "twice"]
    assert _all_words(run, "웹훅 두번 중복 결제") == ["twice"]
    assert _all_words(run, "할수") == ["can"]
    # And the other way round, as before: each word a unit of its own.
    assert _all_words(run, "두 번 만") == ["joined"]


def test_punctuation_latin_and_line_ends_still_keep_runs_apart(
    memory_dir: Path, run: RunCli
) -> None:
    _archive(run)
    assert _all_words(run, "京大") == []
    assert _all_words(run, "录页") == []
    assert _all_words(run, "文日") == []
    assert _all_words(run, "東京") == ["tokyo"] and _all_words(run, "页码") == ["lines"]


def test_the_migration_joins_the_runs_of_an_archive_from_before(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    _archive(run)
    db.migrate("0016", down=True)
    # The terms as 0016's code wrote them: every run apart.
    for rowid, text in db.rows("SELECT id, text FROM messages"):
        runs = cjk_runs(text)
        old = RUN_BREAK.join(" ".join(run) for run in runs) if runs else None
        value = "NULL" if old is None else "'" + old + "'"
        db.rows(f"UPDATE messages SET terms = {value} WHERE id = {rowid}")
    brk = RUN_BREAK.strip()
    [(before,)] = db.rows("SELECT terms FROM messages WHERE uuid = 'twice'")
    assert f"두 {brk} 번" in before
    run("db", "upgrade")  # (any command would: a search migrates first)
    assert db.rows("SELECT version_num FROM alembic_version") == [(SCHEMA_HEAD,)]
    assert _all_words(run, "웹훅 두번") == ["twice"]
    for text, stored in db.rows("SELECT text, terms FROM messages"):
        assert stored == index_terms(text)
    if db.engine == "sqlite":
        # The rewritten rows' delete entries merged away: one segment, and whole.
        assert db.rows("SELECT count(DISTINCT segid) FROM messages_fts_idx") == [(1,)]
        db.rows("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")


def test_single_characters_apart_by_punctuation_match_alike_on_both_engines(
    memory_dir: Path, run: RunCli
) -> None:
    """A run of one character is a word of its own in the text (unicode61; the words
    column's text part on a server): both engines find such words next to each other,
    whatever punctuation is between them, as a phrase of single characters."""
    _transcript(
        "s-2.jsonl",
        _record("comma", "두, 번 확인했어요", session="s-comma"),
        _record("long", "東京。大阪", session="s-long"),
    )
    _ingest(run)
    assert _all_words(run, "두번") == ["comma"]
    assert _all_words(run, "京大") == []  # runs longer than one character: no
