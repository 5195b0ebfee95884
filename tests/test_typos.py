"""A misspelt query word still finds what the person meant (issue 12, recall): a plain
word the archive holds in no form is read as the archive's words one typo away, ranked
as another form, and the person is told on stderr; on both engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subrosa.terms import one_typo_away
from tests.conftest import Db, RunCli, write_leaf
from tests.test_archive import _ingest, _record, _search, _transcript

pytestmark = pytest.mark.engines


def _uuids(results: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("uuid")) for r in results]


@pytest.fixture
def archive(memory_dir: Path, run: RunCli) -> RunCli:
    _transcript(
        "s-1.jsonl",
        _record("vacuum", "Run VACUUM on the postgres database every night.", session="s-1"),
        _record("deploy", "The deployment failed on the staging server.", session="s-2"),
        _record("form", "Fill in the form and send it.", session="s-3"),
        _record("from", "Copied from the other repository.", session="s-4"),
        _record("cjk", "数据库 备份 完成", session="s-5"),
        _record("phrase", "a phrase about the dependency graph", session="s-6"),
        _record("deploys", "Two deploys today, both green.", session="s-7"),
        _record("grant", "The reviewer role lacks a grant.", session="s-8"),
        _record("staging1", "The staging box was rebooted.", session="s-9"),
        _record("staging2", "The staging disk is nearly full.", session="s-10"),
    )
    _ingest(run)
    return run


def test_one_typo_away() -> None:
    near = one_typo_away("vacum")
    assert {"vacuum", "vcaum", "acum", "vacun"} <= set(near)
    assert "vacum" not in near and near == sorted(near)


def test_a_misspelt_word_finds_the_message(archive: RunCli) -> None:
    found = _search(archive, "postgress", "vacum")
    assert _uuids(found)[:1] == ["vacuum"] and found[0]["match"] == "all"
    assert "**postgres**" in found[0]["snippet"]
    one = _search(archive, "deplyoment")  # a one-word query with a typo: not empty
    assert _uuids(one)[:1] == ["deploy"]


def test_says_which_word_was_read_as_which(archive: RunCli) -> None:
    result = archive("search", "postgress", "vacum")
    assert '(read "postgress" as "postgres")' in result.stderr
    assert '(read "vacum" as "vacuum")' in result.stderr
    assert "Run VACUUM" in result.stdout or "VACUUM" in result.stdout
    as_json = archive("search", "--json", "postgress")
    assert "read" not in as_json.stderr  # --json: the results only, unchanged in shape
    assert isinstance(_search(archive, "postgress"), list)
    plain = archive("search", "postgres")
    assert "read" not in plain.stderr


def test_a_word_in_the_archive_is_never_read_as_another(archive: RunCli) -> None:
    # `deploys` is in the archive: kept as typed, though `deploy` is one typo away.
    result = archive("search", "deploys")
    assert "read" not in result.stderr
    assert _uuids(_search(archive, "deploys"))[:1] == ["deploys"]
    # A word whose other form is there is no typo: `deployed` finds deploys/deployment forms.
    assert "read" not in archive("search", "deployed").stderr


def test_short_words_phrases_prefixes_and_cjk_are_untouched(archive: RunCli) -> None:
    # Four letters: too many real words are one typo apart (`form`, `from`).
    assert "read" not in archive("search", "frmo").stderr
    assert _search(archive, "frmo") == []
    # A quoted phrase and a prefix match as typed.
    result = archive("search", '"dependancy graph"')
    assert "read" not in result.stderr and _search(archive, '"dependancy graph"') == []
    result = archive("search", "dependancy*")
    assert "read" not in result.stderr and _search(archive, "dependancy*") == []
    # CJK runs are found by their parts, never read as another word.
    assert "read" not in archive("search", "数据车").stderr


def test_a_corrected_word_ranks_below_the_word_as_typed(archive: RunCli) -> None:
    # `deployment` typed right and a misspelt word: the exact word's message leads.
    found = _search(archive, "deployment", "grnat")
    assert _uuids(found)[0] == "deploy"
    assert "grant" in _uuids(found)


def test_a_reading_never_outranks_a_word_typed_right(archive: RunCli) -> None:
    # `grant` (read from `grnat`) is in one message, `staging` in three: by its idf
    # alone the reading would lead; it counts no more than the word typed right.
    found = _uuids(_search(archive, "staging", "grnat"))
    assert found.index("grant") > max(found.index(u) for u in ("staging1", "staging2", "deploy"))


def test_a_stray_fragment_far_rarer_than_the_word_meant_is_not_a_reading(
    memory_dir: Path, run: RunCli
) -> None:
    # `kubernete`, a cut-off tool output's last word, is one typo from `kubernets` as
    # `kubernetes` is; in 1 message against 150 it is not offered as what was meant.
    records = [
        _record(f"k{n}", f"kubernetes rollout number {n}", session=f"s-{n}") for n in range(150)
    ]
    records.append(_record("stray", "… the log ended at kubernete", session="s-x"))
    records.append(_record("cach", "clear the cache first", session="s-y"))
    records.append(_record("staged", "the files are staged", session="s-z"))
    records.append(_record("stages", "two stages left", session="s-w"))
    _transcript("s-1.jsonl", *records)
    _ingest(run)
    result = run("search", "kubernets")
    assert '(read "kubernets" as "kubernetes")' in result.stderr
    assert "stray" not in _uuids(_search(run, "kubernets"))
    # Readings in a like number of messages are all kept.
    assert '(read "cacheh" as "cache")' in run("search", "cacheh").stderr
    assert '(read "stagex" as "staged" or "stages")' in run("search", "stagex").stderr


def test_a_misspelt_word_finds_a_fact(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "nightly-vacuum.md", "Nightly vacuum", body="Run vacuum every night.")
    _transcript("s-1.jsonl", _record("a", "vacuum the database", session="s-1"))
    _ingest(run)
    run("generate")
    found = _search(run, "vacum")
    assert "nightly-vacuum" in [r.get("slug") for r in found]


def _lexicon(db: Db) -> set[str]:
    return {str(term) for (term,) in db.rows("SELECT term FROM lexicon")}


@pytest.mark.engines("postgresql")
def test_the_servers_lexicon_is_kept_by_every_write(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path
) -> None:
    """PostgreSQL asks a misspelling's candidates of table lexicon (migration 0016):
    ingest, an update of a text (as a migration makes) and import keep it whole, and
    the migration fills it for an archive from before."""
    _transcript("s-1.jsonl", _record("a", "Run VACUUM on postgres nightly.", session="s-1"))
    _ingest(run)
    assert {"run", "vacuum", "on", "postgres", "nightly"} <= _lexicon(db)
    _transcript(
        "s-1.jsonl",
        _record("a", "Run VACUUM on postgres nightly.", session="s-1"),
        _record("b", "Then reindex the tables.", session="s-1"),
    )
    _ingest(run)
    assert {"reindex", "tables"} <= _lexicon(db)
    db.rows("UPDATE messages SET text = text || ' zymurgy' WHERE uuid = 'a'")
    assert "zymurgy" in _lexicon(db)
    assert "read" in run("search", "--all-projects", "zymrugy").stderr
    held = _lexicon(db)
    # An archive from before 0016: the migration makes the table from its messages.
    db.migrate("0015", down=True)
    assert db.rows("SELECT to_regclass('lexicon')::text") == [(None,)]
    run("db", "upgrade")
    assert _lexicon(db) == held
    # Import into an empty archive: its words are there.
    run("export", str(tmp_path / "me.jsonl"))
    db.reset()
    run("import", str(tmp_path / "me.jsonl"))
    assert _lexicon(db) == held
    assert '(read "vacum" as "vacuum")' in run("search", "--all-projects", "vacum").stderr
