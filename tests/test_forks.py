"""Forked sessions in the archive: a fork's transcript (`claude --resume ID
--fork-session`, `/branch`) begins with a copy of its parent's records, uuids kept; the
archive stores each message once, and `transcript show` gives each session all its
file holds, whichever session was archived first (the shared_messages table)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from tests.conftest import Db, RunCli
from tests.test_archive import _ingest, _record, _search, _transcript

pytestmark = pytest.mark.engines  # SQLite and PostgreSQL


def said(session: str, *words: str) -> list[str]:
    """A prompt and its answer per word, as records of `session` (uuid = the text)."""
    return [
        _record(
            f"{kind}-{word}",
            f"{kind} {word}",
            role="user" if kind == "prompt" else "assistant",
            session=session,
            timestamp=f"2026-03-01T10:{minute:02d}:{second:02d}Z",
        )
        for minute, word in enumerate(words)
        for second, kind in enumerate(("prompt", "answer"))
    ]


def conversation(*words: str) -> list[tuple[str, str]]:
    return [(role, f"{kind} {w}") for w in words for kind, role in PAIR]


PAIR = (("prompt", "user"), ("answer", "assistant"))
PARENT, FORK, FORK2 = "b-parent", "a-fork", "c-fork-of-fork"


def shown(run: RunCli, session: str, *args: str) -> list[tuple[str, str]]:
    found = json.loads(run("transcript", "show", session, "--json", *args).stdout)
    return [(m["role"], m["text"]) for m in found["messages"]]


def counts(run: RunCli) -> dict[str, int]:
    listed = json.loads(run("transcript", "list", "--json").stdout)
    return {s["session_id"]: s["message_count"] for s in listed}


def files() -> dict[str, Path]:
    """A session (AARDVARK), a fork of it (BADGER), a fork of the fork (CHEETAH): each
    file the history before it copied under its own session id, as Claude Code writes."""
    return {
        PARENT: _transcript(f"{PARENT}.jsonl", *said(PARENT, "AARDVARK")),
        FORK: _transcript(f"{FORK}.jsonl", *said(FORK, "AARDVARK", "BADGER")),
        FORK2: _transcript(f"{FORK2}.jsonl", *said(FORK2, "AARDVARK", "BADGER", "CHEETAH")),
    }


# What each session of files() says: its file's whole conversation.
SAYS = {
    PARENT: ("AARDVARK",),
    FORK: ("AARDVARK", "BADGER"),
    FORK2: ("AARDVARK", "BADGER", "CHEETAH"),
}


def assert_whole(run: RunCli, *sessions: str) -> None:
    """Each of `sessions` shows and counts its file's whole conversation (SAYS)."""
    for session in sessions:
        assert shown(run, session) == conversation(*SAYS[session])
    assert {s: n for s, n in counts(run).items() if s in sessions} == {
        s: 2 * len(SAYS[s]) for s in sessions
    }


@pytest.mark.parametrize("order", [(PARENT, FORK), (FORK, PARENT)], ids=["parent", "fork"])
def test_parent_and_fork_each_show_their_whole_conversation(
    memory_dir: Path, run: RunCli, order: tuple[str, str]
) -> None:
    paths = files()
    for session in order:
        _ingest(run, str(paths[session]))

    assert_whole(run, PARENT, FORK)
    assert set(counts(run)) == {PARENT, FORK}
    # Stored once: a search lists a shared message once, under the session it is stored
    # in (the one archived first); --sessions counts it there.
    [hit] = _search(run, "--transcripts", '"prompt AARDVARK"')
    assert hit["session_id"] == order[0]
    by_session = {s["session_id"]: s["messages"] for s in _search(run, "--sessions", "answer")}
    assert by_session == ({PARENT: 1, FORK: 1} if order[0] == PARENT else {FORK: 2})


def test_a_folder_whose_fork_sorts_first_keeps_the_parents_start(
    memory_dir: Path, run: RunCli
) -> None:
    files()
    report = _ingest(run)  # the folder's files by name: the forks first
    assert (report["new_messages"], report["duplicate_messages"]) == (6, 6)

    assert_whole(run, PARENT, FORK, FORK2)
    assert set(counts(run)) == {PARENT, FORK, FORK2}
    # The text view and its header count as --json does.
    text = run("transcript", "show", PARENT).stdout
    assert "2 messages" in text and "prompt AARDVARK" in text


@pytest.mark.parametrize("order", list(itertools.permutations((PARENT, FORK, FORK2))))
def test_a_fork_of_a_fork_in_any_order(
    memory_dir: Path, run: RunCli, order: tuple[str, str, str]
) -> None:
    paths = files()
    for session in order:
        _ingest(run, str(paths[session]))

    assert_whole(run, PARENT, FORK, FORK2)
    assert set(counts(run)) == {PARENT, FORK, FORK2}
    for word in ("AARDVARK", "BADGER", "CHEETAH"):
        assert len(_search(run, "--transcripts", f'"prompt {word}"')) == 1


def test_around_a_shared_message_in_the_fork(memory_dir: Path, run: RunCli) -> None:
    paths = files()
    _ingest(run, str(paths[PARENT]))
    _ingest(run, str(paths[FORK]))

    # The shared message's number (as search prints it) and its uuid both place it.
    [hit] = _search(run, "--transcripts", '"answer AARDVARK"')
    assert hit["session_id"] == PARENT
    for at in (str(hit["message_id"]), hit["uuid"]):
        assert shown(run, FORK, "--around", at, "--context", "1") == [
            ("user", "prompt AARDVARK"),
            ("assistant", "answer AARDVARK"),
            ("user", "prompt BADGER"),
        ]


def _replace(path: Path, *records: str) -> None:
    """The file written anew (another inode): ingest reads it again from the start."""
    new = path.with_suffix(".new")
    new.write_text("".join(r + "\n" for r in records), encoding="utf-8")
    os.replace(new, path)


def test_a_resumed_session_repeating_its_history_shares_nothing_with_itself(
    memory_dir: Path, run: RunCli
) -> None:
    path = _transcript(f"{PARENT}.jsonl", *said(PARENT, "AARDVARK"))
    _ingest(run)
    # Resumed (and the file rewritten): the history again, then a new turn.
    _replace(path, *said(PARENT, "AARDVARK", "BADGER"))
    report = _ingest(run)
    assert (report["files_restarted"], report["new_messages"]) == (1, 2)

    assert shown(run, PARENT) == conversation("AARDVARK", "BADGER")
    assert counts(run) == {PARENT: 4}


def test_a_fork_read_again_shares_each_message_once(memory_dir: Path, run: RunCli) -> None:
    paths = files()
    _ingest(run, str(paths[PARENT]))
    _ingest(run, str(paths[FORK]))
    _replace(paths[FORK], *said(FORK, "AARDVARK", "BADGER", "DINGO"))
    _ingest(run, str(paths[FORK]))

    assert shown(run, FORK) == conversation("AARDVARK", "BADGER", "DINGO")
    assert shown(run, PARENT) == conversation("AARDVARK")
    assert counts(run) == {PARENT: 2, FORK: 6}


def test_a_batch_holding_a_message_twice_under_two_sessions(memory_dir: Path, run: RunCli) -> None:
    """One file with both sessions' records (a copy of several transcripts joined): the
    first copy stored, the second shared with its session."""
    _transcript("joined.jsonl", *said(PARENT, "AARDVARK"), *said(FORK, "AARDVARK", "BADGER"))
    report = _ingest(run)
    assert (report["new_messages"], report["duplicate_messages"]) == (4, 2)

    assert shown(run, PARENT) == conversation("AARDVARK")
    assert shown(run, FORK) == conversation("AARDVARK", "BADGER")


def _as_before_0010(db: Db) -> None:
    """The archive made as an older subrosa left it: no shared_messages, each session
    counting only the messages stored under it, at revision 0009 (0010's parent)."""
    db.rows("DROP TABLE shared_messages")
    db.rows("ALTER TABLE ingested_files DROP COLUMN queue_state")  # migration 0012's
    db.rows(
        "UPDATE sessions SET message_count ="
        " (SELECT count(*) FROM messages WHERE session_pk = sessions.id)"
    )
    db.rows("UPDATE alembic_version SET version_num = '0009'")


@pytest.mark.parametrize("order", [(PARENT, FORK), (FORK, PARENT)], ids=["parent", "fork"])
def test_the_migration_reads_again_the_forks_archived_before_it(
    memory_dir: Path, run: RunCli, db: Db, order: tuple[str, str]
) -> None:
    paths = files()
    paths[FORK2].unlink()
    _transcript("d-alone.jsonl", *said("d-alone", "ZEBU"))
    for session in order:
        _ingest(run, str(paths[session]))
    _ingest(run)
    _as_before_0010(db)
    assert counts(run) != {PARENT: 2, FORK: 4, "d-alone": 2}
    run("db", "upgrade")

    # The session that held messages stored under the other is read again; no other.
    report = _ingest(run)
    assert (report["files_read"], report["new_messages"]) == (1, 0)
    assert shown(run, PARENT) == conversation("AARDVARK")
    assert shown(run, FORK) == conversation("AARDVARK", "BADGER")
    assert counts(run) == {PARENT: 2, FORK: 4, "d-alone": 2}


@pytest.mark.parametrize("order", [(PARENT, FORK), (FORK, PARENT)], ids=["parent", "fork"])
def test_an_export_moves_each_sessions_whole_conversation(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path, order: tuple[str, str]
) -> None:
    # A fork's copied history goes with the fork (and the parent's start with the
    # parent): in the target each shows what it shows here, each message stored once.
    paths = files()
    for session in (*order, FORK2):
        _ingest(run, str(paths[session]))
    exported = json.loads(run("export", str(tmp_path / "me.jsonl"), "--json").stdout)
    assert exported["messages"] == 2 + 4 + 6  # each session's whole conversation
    target = db.other("team")
    done = json.loads(run("--db", target, "import", str(tmp_path / "me.jsonl"), "--json").stdout)
    assert done["messages"] == {"added": 6, "present": 6}

    for session, words in ((PARENT, 1), (FORK, 2), (FORK2, 3)):
        want = conversation(*("AARDVARK", "BADGER", "CHEETAH")[:words])
        assert shown(run, session) == want
        found = json.loads(run("--db", target, "transcript", "show", session, "--json").stdout)
        assert [(m["role"], m["text"]) for m in found["messages"]] == want
    listed = json.loads(run("--db", target, "transcript", "list", "--json").stdout)
    assert {s["session_id"]: s["message_count"] for s in listed} == counts(run)
    # Again: nothing added, nothing shared twice.
    again = json.loads(run("--db", target, "import", str(tmp_path / "me.jsonl"), "--json").stdout)
    assert again["messages"] == {"added": 0, "present": 12}
    listed = json.loads(run("--db", target, "transcript", "list", "--json").stdout)
    assert {s["session_id"]: s["message_count"] for s in listed} == counts(run)


# Claude Code 2.1.63 (and older) copies a fork's history with the parent's sessionId:
# only the file's name says whose it is now. Session ids as Claude Code makes them.
OLD_PARENT = "fc7ca07b-973d-4d40-b12f-7de39845e2e2"
OLD_FORK = "e13bd465-18df-4d7b-97bc-6615f4485e1d"


@pytest.mark.parametrize("order", [(OLD_PARENT, OLD_FORK), (OLD_FORK, OLD_PARENT)])
def test_a_fork_whose_copied_history_keeps_the_parents_session_id_shows_it(
    memory_dir: Path, run: RunCli, order: tuple[str, str]
) -> None:
    paths = {
        OLD_PARENT: _transcript(f"{OLD_PARENT}.jsonl", *said(OLD_PARENT, "AARDVARK")),
        OLD_FORK: _transcript(f"{OLD_FORK}.jsonl", *said(OLD_PARENT, "AARDVARK")),
    }
    # The fork's own turn, after the copy (its minutes after the parent's).
    with paths[OLD_FORK].open("a", encoding="utf-8") as handle:
        for second, (kind, role) in enumerate(PAIR):
            handle.write(
                _record(
                    f"{kind}-DINGO",
                    f"{kind} DINGO",
                    role=role,
                    session=OLD_FORK,
                    timestamp=f"2026-03-01T11:00:{second:02d}Z",
                )
                + "\n"
            )
    for session in order:
        _ingest(run, str(paths[session]))

    assert shown(run, OLD_PARENT) == conversation("AARDVARK")
    assert shown(run, OLD_FORK) == conversation("AARDVARK", "DINGO")
    assert counts(run) == {OLD_PARENT: 2, OLD_FORK: 4}
    [hit] = _search(run, "--transcripts", '"prompt AARDVARK"')  # stored once
    assert hit["session_id"] == order[0]
