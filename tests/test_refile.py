"""Sessions subrosa filed under a misspelled project key get filed where they belong.

Before subrosa spelled Claude Code's folder for a project as Claude Code does (commit
7aee5fe: an emoji is two `-`, a name over 200 characters is cut and followed by a hash),
it filed the sessions of a project at such a path under a key the project no longer
has: its old spelling of the folder (a project without a name), or Claude Code's folder
of the session's own subfolder (or of the project, for one with a name). `search` and
`transcript list` in the project did not find them. The rows here are written as that
code wrote them (its keys, read from a run of it); ingest files them again.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from subrosa.paths import claude_root, encode_project_path
from tests.conftest import Db, RunCli
from tests.test_team import _repository

SSH = "git@github.com:org/notes.git"
NAME = "github.com/org/notes"
LONG = "/".join(f"a-rather-long-folder-name-{n:02d}" for n in range(7))


def _former_spelling(path: Path) -> str:
    """subrosa's spelling of a project's folder before 7aee5fe: each code point that is
    not an ASCII letter or digit one `-`, never cut."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def _checkout(folder: Path, remote: str | None = None) -> Path:
    return _repository(folder, remote)


def _session(cwd: Path, session: str, text: str) -> Path:
    """A transcript where Claude Code files a session started in `cwd`."""
    folder = Path(claude_root()) / "projects" / encode_project_path(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    record = {
        "type": "user",
        "uuid": f"{session}-1",
        "sessionId": session,
        "timestamp": "2026-03-01T10:00:00Z",
        "cwd": str(cwd),
        "message": {"role": "user", "content": text},
    }
    path = folder / f"{session}.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def _sql(url: str, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    from sqlalchemy import text

    from subrosa.db import dispose_all, get_engine

    with get_engine(url).begin() as conn:
        result = conn.execute(text(sql), params or {})
        rows = [tuple(row) for row in result] if result.returns_rows else []
    dispose_all()
    return rows


def _listed(run: RunCli, where: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    monkeypatch.chdir(where)
    return {s["session_id"] for s in json.loads(run("transcript", "list", "--json").stdout)}


def _found(run: RunCli, where: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    monkeypatch.chdir(where)
    hits = json.loads(run("search", "--transcripts", "KOOKABURRA", "--json").stdout)
    return {h["session_id"] for h in hits}


class Projects:
    """Three projects at paths Claude Code spells its own way, and a sibling whose folder
    is named as one of their subfolders' is, each with its sessions archived and filed
    as subrosa before 7aee5fe filed them."""

    def __init__(self, tmp_path: Path, url: str) -> None:
        self.url = url
        self.named = _checkout(tmp_path / "notes 🦀 café", SSH)
        self.crab = _checkout(tmp_path / "crab🦀")
        self.long = _checkout(tmp_path / LONG)
        # Claude Code's folder of `crab🦀-src` is that of `crab🦀/src`.
        self.sibling = _checkout(tmp_path / "crab🦀-src")
        # A repository of its own inside crab🦀: its sessions are its own.
        self.nested = _checkout(self.crab / "vendor" / "lib")
        assert encode_project_path(self.sibling) == encode_project_path(self.crab / "src")
        # Each session, where it ran, and the key the old code filed it under.
        self.cwds = {
            "named-root": self.named,
            "named-sub": self.named / "src" / "api",
            "crab-root": self.crab,
            "crab-sub": self.crab / "src",
            "long-root": self.long,
            "long-sub": self.long / "src" / "api",
            "sibling": self.sibling,
            "nested": self.nested / "src",
        }
        self.old_keys = {
            "named-root": encode_project_path(self.named),
            "named-sub": encode_project_path(self.named / "src" / "api"),
            "crab-root": _former_spelling(self.crab),
            "crab-sub": _former_spelling(self.crab),
            "long-root": encode_project_path(self.long),
            "long-sub": encode_project_path(self.long / "src" / "api"),
            "sibling": encode_project_path(self.sibling),
            "nested": encode_project_path(self.nested / "src"),
        }
        for session, cwd in self.cwds.items():
            _session(cwd, session, f"remember KOOKABURRA in {session}")

    def file_as_before(self) -> None:
        for session, key in self.old_keys.items():
            _sql(
                self.url,
                "UPDATE sessions SET project = :key WHERE session_id = :session",
                {"key": key, "session": session},
            )

    def keys(self) -> dict[str, str]:
        return dict(_sql(self.url, "SELECT session_id, project FROM sessions"))

    def stored(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Every session (id, messages) and every message: what must not change."""
        return (
            _sql(self.url, "SELECT session_id, message_count FROM sessions ORDER BY 1"),
            _sql(self.url, "SELECT session_pk, uuid, text FROM messages ORDER BY uuid"),
        )

    def expected(self) -> dict[str, set[str]]:
        """The sessions `transcript list` shows in each project."""
        return {
            "named": {"named-root", "named-sub"},
            "crab": {"crab-root", "crab-sub"},
            "long": {"long-root", "long-sub"},
            "sibling": {"sibling"},
            "nested": {"nested"},
        }

    def folders(self) -> dict[str, Path]:
        return {
            "named": self.named,
            "crab": self.crab,
            "long": self.long,
            "sibling": self.sibling,
            "nested": self.nested,
        }


@pytest.fixture
def projects(tmp_path: Path, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch) -> Projects:
    from subrosa.config import resolve_db_url

    monkeypatch.setenv("SUBROSA_DB", db.url)
    made = Projects(tmp_path, resolve_db_url(db.url))
    monkeypatch.chdir(tmp_path)
    run("ingest", "--all-projects")
    made.file_as_before()
    return made


@pytest.mark.engines
def test_ingest_in_the_project_files_its_misspelled_sessions(
    projects: Projects, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders, expected = projects.folders(), projects.expected()
    # As the old code left them: the project does not find them.
    assert _listed(run, folders["named"], monkeypatch) == set()
    assert _listed(run, folders["crab"], monkeypatch) == set()
    assert _listed(run, folders["long"], monkeypatch) == {"long-root"}
    assert _found(run, folders["crab"], monkeypatch) == set()
    before = projects.stored()

    # `subrosa ingest` in each project, with nothing new to read, files them.
    for project, folder in folders.items():
        monkeypatch.chdir(folder)
        assert json.loads(run("ingest", "--json").stdout)["new_messages"] == 0
        assert _listed(run, folder, monkeypatch) == expected[project], project
        assert _found(run, folder, monkeypatch) == expected[project], project
    keys = projects.keys()
    assert keys["named-sub"] == keys["named-root"] == NAME
    assert keys["crab-root"] == keys["crab-sub"] == encode_project_path(projects.crab)
    assert keys["long-sub"] == keys["long-root"] == encode_project_path(projects.long)
    # The sibling whose folder is named as crab🦀/src's stays its own project.
    assert keys["sibling"] == encode_project_path(projects.sibling)
    assert keys["nested"] == encode_project_path(projects.nested)
    # Nothing lost, nothing twice; and again, nothing changes.
    assert projects.stored() == before
    for folder in folders.values():
        monkeypatch.chdir(folder)
        run("ingest")
    assert projects.keys() == keys and projects.stored() == before


@pytest.mark.engines
def test_the_next_session_of_the_project_files_them(
    projects: Projects, run: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The ingest a session's end starts (`ingest --pending`, in a neutral folder, of the
    sessions the SessionEnd hook noted) files the project's older sessions too."""
    from subrosa.archive import pending

    ended = {
        "crab": (projects.crab, "crab-new"),
        "long": (projects.long / "docs", "long-new"),
        "named": (projects.named, "named-new"),
    }
    for cwd, session in ended.values():
        pending.record(str(_session(cwd, session, "a new session")), session, str(cwd))
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    monkeypatch.chdir(neutral)
    run("ingest", "--pending")
    expected = projects.expected()
    for project, (_, session) in ended.items():
        expected[project].add(session)
    for project, folder in projects.folders().items():
        assert _listed(run, folder, monkeypatch) == expected[project], project


@contextmanager
def _statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The SQL statements ingest runs on its SQLite archive."""
    from subrosa.archive import ingest

    statements: list[str] = []
    opened = ingest.open_archive

    @contextmanager
    def traced(*args: Any, **kwargs: Any) -> Iterator[sqlite3.Connection]:
        with opened(*args, **kwargs) as conn:
            conn.set_trace_callback(statements.append)
            yield conn

    with monkeypatch.context() as patch:
        patch.setattr(ingest, "open_archive", traced)
        yield statements


def test_an_ingest_with_nothing_to_file_asks_once_at_most(
    projects: Projects, run: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ingest runs at every session's end: with nothing to file, one indexed question for
    a project at a path Claude Code spells its own way, none for any other."""
    for folder in (projects.crab, projects.long):
        monkeypatch.chdir(folder)
        run("ingest")
    plain = _checkout(tmp_path / "plain")
    for folder in (projects.crab, projects.long, plain):
        _session(folder, f"{folder.name}-more", "more")
        monkeypatch.chdir(tmp_path)
        with _statements(monkeypatch) as statements:
            run("ingest", "--all-projects")
        asked = [s for s in statements if "FROM sessions WHERE project IN" in s]
        assert len(asked) == (0 if folder == plain else 1), statements
        assert not [s for s in statements if "UPDATE sessions SET project" in s]
        if asked:
            plan = _sql(projects.url, f"EXPLAIN QUERY PLAN {asked[0]}")
            assert "INDEX ix_sessions_project_last" in str(plan), plan
