"""The roles of docs/team.md ("Security: …") on a real server: owner, member, reader.

The SQL is read out of the doc's own blocks, so the doc and what is tested cannot drift:
the first block run as an admin on a blank database, `subrosa db upgrade` as the owner,
the second block as the owner, the third (each person's login role) as the admin. Then
every command runs as a real process as each role: the member archives, searches and
changes facts; the reader searches, lists and shows; what a role may not do fails in
one sentence, exit 1, no traceback, the URL's password hidden.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from filelock import FileLock
from sqlalchemy.engine import make_url

from subrosa.archive import pending
from subrosa.archive.pgpostings import CHUNK
from subrosa.archive.pgsearch import RANGE
from subrosa.schema import SCHEMA_HEAD
from tests.conftest import REPO, Db, subrosa_forked, write_leaf
from tests.postgres import Cluster
from tests.test_team import SSH, _clone, _record, _session

pytestmark = pytest.mark.engines("postgresql")

SECTION = "## Security: what the server holds, who reads it, roles"
ROLES = ("alice", "rita", "subrosa_member", "subrosa_reader", "subrosa_owner")
PASSWORD = "s3cret-pw"  # trust authentication ignores it; it must never be printed


def doc_blocks() -> list[str]:
    """The ```sql blocks of the doc's roles section, in order."""
    text = (REPO / "docs" / "team.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, flags=re.S)


@dataclass
class Team:
    """A database set up by the doc's script, a clone with one session to archive."""

    admin: str  # libpq URL of the admin, on the team's database
    clone: Path
    transcript: Path
    env: dict[str, str]

    def url(self, role: str, password: bool = False) -> str:
        url = make_url(self.admin).set(username=role, password=PASSWORD if password else None)
        return url.render_as_string(hide_password=False)

    def run(
        self, role: str, *args: str, expect: int = 0, password: bool = False
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, SUBROSA_DB=self.url(role, password), SUBROSA_USER=role)
        result = subrosa_forked(*args, env=env, cwd=self.clone)
        out, err = result.stdout.decode(), result.stderr.decode()
        assert result.returncode == expect, f"{role}: {args}: {result.returncode}\n{out}\n{err}"
        assert "Traceback" not in err and PASSWORD not in out + err
        return subprocess.CompletedProcess(result.args, result.returncode, out, err)

    def sql(self, statements: str, role: str | None = None) -> list[tuple[object, ...]]:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            if role is not None:
                conn.execute(f"SET ROLE {role}")
            cursor = conn.execute(statements)
            return list(cursor.fetchall()) if cursor.description else []


def _drop_roles(admin: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        present = [r for (r,) in conn.execute("SELECT rolname FROM pg_roles") if r in ROLES]
        # One role at a time: dropping several whose default privileges name each other
        # in one statement trips the server ("could not find tuple for default ACL").
        for role in present:
            conn.execute(f"DROP OWNED BY {role} CASCADE")
        for role in present:
            conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def team(db: Db, tmp_path: Path) -> Iterator[Team]:
    admin = make_url(db.url).set(drivername="postgresql").render_as_string(hide_password=False)
    setup, grants, people = doc_blocks()
    clone = _clone(tmp_path / "repo", SSH)
    transcript = _session(clone, "s1", "the zanzibar cache is warmed at start", "we keep it warm")
    env = dict(os.environ, SUBROSA_MEMORY_DIR=str(clone / ".claude" / "memory"))
    team = Team(admin, clone, transcript, env)
    with contextlib.ExitStack() as stack:
        if db.cluster is not None and db.cluster.directory is None:  # SUBROSA_TEST_PG_URL's
            # Roles are the whole server's, and pytest-xdist's workers (or other runs on
            # this machine) share that server: one test at a time holds them.
            stack.enter_context(_roles_lock(db.cluster))
            with psycopg.connect(admin, autocommit=True) as conn:
                taken = [r for (r,) in conn.execute("SELECT rolname FROM pg_roles") if r in ROLES]
            if taken:  # never drop someone else's
                pytest.skip(f"the server at SUBROSA_TEST_PG_URL already has the roles {taken}")
        else:
            _drop_roles(admin)  # our own throwaway cluster (each worker's), after a run cut short
        yield from _set_up(team, admin, setup, grants, people)


def _roles_lock(cluster: Cluster) -> FileLock:
    """A lock on this machine for the roles of the server at SUBROSA_TEST_PG_URL."""
    server = cluster.admin.set(database=None, password=None).render_as_string()
    key = hashlib.sha256(server.encode()).hexdigest()[:16]
    return FileLock(str(Path(tempfile.gettempdir()) / f"subrosa-test-roles-{key}.lock"))


def _set_up(team: Team, admin: str, setup: str, grants: str, people: str) -> Iterator[Team]:
    try:
        team.sql(setup)
        said = team.run("subrosa_owner", "db", "upgrade").stdout
        assert f"to {SCHEMA_HEAD}" in said
        team.sql(grants, role="subrosa_owner")
        team.sql(people)
        yield team
    finally:
        _drop_roles(admin)


def _one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one sentence a refused command printed."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def test_the_doc_has_the_three_blocks_the_test_runs() -> None:
    setup, grants, people = doc_blocks()
    assert "CREATE ROLE subrosa_owner" in setup and "ALTER DEFAULT PRIVILEGES" in setup
    assert "GRANT SELECT, INSERT ON messages TO subrosa_member" in grants
    assert "IN ROLE subrosa_member" in people and "IN ROLE subrosa_reader" in people


def test_a_member_archives_searches_and_changes_facts(team: Team) -> None:
    write_leaf(team.clone / ".claude" / "memory", "zanzibar_cache.md", "The zanzibar cache.")
    assert "2 new messages" in team.run("alice", "ingest").stdout
    team.run("alice", "generate")
    team.run("alice", "fact", "pin", "zanzibar_cache")
    team.run("alice", "fact", "unpin", "zanzibar_cache")
    found = team.run("alice", "search", "zanzibar").stdout
    assert "fact zanzibar_cache" in found and "message s1" in found
    assert team.sql("SELECT hits FROM facts") == [(1,)]  # the member's search counted it
    assert "alice may archive and change facts, not migrate" in team.run("alice", "doctor").stdout
    assert "subrosa_owner owns the tables" in team.run("subrosa_owner", "doctor").stdout
    team.run("alice", "stale", "--apply")
    team.run("alice", "rebuild", "--yes")
    team.run("alice", "export", "team.jsonl")
    assert "already here" in team.run("alice", "import", "team.jsonl").stdout
    assert "s1" in team.run("alice", "transcript", "list", "--by", "alice").stdout
    team.run("alice", "fact", "forget", "zanzibar_cache", "--delete-leaf", "--yes")
    assert team.sql("SELECT count(*) FROM facts") == [(0,)]
    # On a current schema, a member's upgrade is harmless.
    assert "already at revision" in team.run("alice", "db", "upgrade").stdout
    # Runs of ids lost: doctor says so to anyone; deriving them again is the owner's.
    team.sql("DELETE FROM message_runs", role="subrosa_owner")
    for role in ("alice", "rita"):
        assert "lie outside their session's runs" in team.run(role, "doctor", expect=1).stdout
    assert "only the role that owns" in _one_error(team.run("alice", "db", "upgrade", expect=1))
    assert "derived each session's runs" in team.run("subrosa_owner", "db", "upgrade").stdout
    assert "every archived message is in" in team.run("rita", "doctor", expect=1).stdout
    # What a member may not do: create tables or indexes, delete the archive.
    for statement in (
        "CREATE TABLE x (y int)",
        "DELETE FROM messages",
        "DROP INDEX ix_messages_words",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            team.sql(statement, role="alice")


def test_a_reader_searches_lists_and_shows_but_writes_nothing(team: Team) -> None:
    write_leaf(team.clone / ".claude" / "memory", "zanzibar_cache.md", "The zanzibar cache.")
    team.run("alice", "ingest")
    team.run("alice", "generate")
    before = team.sql("SELECT hits FROM facts")
    # The reader's hooks queued an ended session: its commands leave it queued.
    entry = Path(pending.record(str(team.transcript), "s1", str(team.clone)))
    found = team.run("rita", "search", "zanzibar", password=True).stdout
    assert "fact zanzibar_cache" in found and "message s1" in found
    assert team.sql("SELECT hits FROM facts") == before  # a reader counts no hits
    assert "s1" in team.run("rita", "transcript", "list", password=True).stdout
    assert "zanzibar" in team.run("rita", "transcript", "show", "s1", password=True).stdout
    assert "zanzibar_cache" in team.run("rita", "fact", "list", password=True).stdout
    assert "The zanzibar cache" in team.run("rita", "fact", "show", "zanzibar_cache").stdout
    team.run("rita", "export", "mine.jsonl")
    assert f"revision {SCHEMA_HEAD}" in team.run("rita", "db", "status").stdout
    assert "already at revision" in team.run("rita", "db", "upgrade", password=True).stdout
    assert entry.exists()
    doctor = team.run("rita", "doctor", password=True).stdout
    assert "may only read" in doctor
    # Its queued session is no backlog to fix (`subrosa ingest` would be refused).
    [backlog] = [line for line in doctor.splitlines() if "transcript backlog" in line]
    assert backlog.startswith("ok ") and "1 ended session(s) queued" in backlog, backlog
    assert "transcript backlog: 1 ended session(s) not archived" not in doctor

    refused = _one_error(team.run("rita", "ingest", password=True, expect=1))
    assert "rita may read the archive but not write it" in refused
    assert "INSERT on the table messages and TEMPORARY on the database" in refused
    refused = _one_error(team.run("rita", "fact", "pin", "zanzibar_cache", password=True, expect=1))
    assert "permission denied for table facts" in refused and "rita:***@" in refused
    assert team.sql("SELECT count(*) FROM messages") == [(2,)]


def test_a_due_migration_needs_the_owner(team: Team) -> None:
    # The schema behind, as after installing a newer subrosa: 0009 to 0012 are due. The
    # tables they make are ones members write: the owner's upgrade grants them to them
    # (the grants made when the team was set up went with the tables).
    team.sql(
        "DROP TABLE shared_messages; DROP TABLE message_runs;"
        " ALTER TABLE ingested_files DROP COLUMN queue_state;"
        " UPDATE alembic_version SET version_num = '0008'"
    )
    for args in (("db", "upgrade"), ("search", "zanzibar"), ("ingest",)):
        refused = _one_error(team.run("alice", *args, password=True, expect=1))
        # The server's reason: the first statement it refused (a table to alter, or
        # to create).
        assert f"cannot migrate to revision {SCHEMA_HEAD} (" in refused
        assert "must be owner of table" in refused or "permission denied for schema" in refused
        assert "only the role that owns them may do" in refused and "alice:***@" in refused
    # doctor's fix names who may run the upgrade: not `subrosa db upgrade` alone, which
    # this member's role would be refused; the owner's is told to run it.
    said = team.run("alice", "doctor", password=True, expect=1).stdout
    fix = said[said.index("!! database") :].splitlines()[1].strip()
    assert fix.startswith("fix: subrosa db upgrade as the role that owns the tables"), said
    assert "alice may not migrate" in fix, said
    said = team.run("subrosa_owner", "doctor", expect=1).stdout
    assert said[said.index("!! database") :].splitlines()[1].strip() == "fix: subrosa db upgrade"
    team.run("subrosa_owner", "db", "upgrade")
    assert "2 new messages" in team.run("alice", "ingest").stdout
    # The owner's upgrade granted migration 0010's table to the members.
    _fork(team, "s0")
    assert "1 new messages" in team.run("alice", "ingest").stdout
    assert team.sql("SELECT count(*) FROM shared_messages") == [(2,)]


def test_a_member_who_may_not_share_archives_a_fork_as_before(team: Team) -> None:
    team.sql("REVOKE INSERT ON shared_messages FROM subrosa_member", role="subrosa_owner")
    team.run("alice", "ingest")
    _fork(team, "s0")
    assert "1 new messages" in team.run("alice", "ingest").stdout
    # Each message once, the fork showing only what it added.
    assert team.sql("SELECT count(*) FROM shared_messages") == [(0,)]
    assert team.run("alice", "transcript", "show", "s0").stdout.count("\nuser ") == 1


def _fork(team: Team, fork: str) -> None:
    """A fork of the session s1, as Claude Code writes one: its records copied under the
    fork's id (uuids kept), then a prompt of its own."""
    copied = team.transcript.read_text().replace('"sessionId": "s1"', f'"sessionId": "{fork}"')
    own = _record(f"{fork}-own", "the fork asks about the quokka", fork, team.clone)
    team.transcript.with_name(f"{fork}.jsonl").write_text(copied + own + "\n")


def test_a_members_ingest_of_a_fork_shares_the_copied_history(team: Team) -> None:
    team.run("alice", "ingest")
    _fork(team, "s0")
    assert "1 new messages" in team.run("alice", "ingest").stdout
    shown = team.run("rita", "transcript", "show", "s0", "--json").stdout
    assert shown.count('"role": "user"') == 3  # the two copied and its own


def test_a_members_ingest_leaves_the_range_indexes_to_the_owner(team: Team) -> None:
    """Past the ranges the owner's upgrade built, a member's ingest may not build the
    next range's index (pgstore._ranges_ahead catches the refusal): it archives all the
    same, and search finds the messages through the whole table's index."""
    far = RANGE * 9 + 10  # range 9; 0008 built 0-8
    team.sql(f"SELECT setval('messages_id_seq', {far})")
    assert "2 new messages" in team.run("alice", "ingest").stdout
    assert team.sql("SELECT min(id) FROM messages") == [(far + 1,)]
    names = "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ix_messages_words_r%'"
    assert len(team.sql(names)) == 9
    assert "message s1" in team.run("alice", "search", "zanzibar").stdout
    assert "message s1" in team.run("rita", "search", "zanzibar").stdout


def test_a_member_seals_the_postings_and_a_reader_reads_them(team: Team) -> None:
    """Sealing runs as the tables' owner (SECURITY DEFINER): a member's ingest seals the
    complete chunks of ids with no grant on the postings, and may not write them
    itself; a reader reads both tables (the set-up's default privileges). A role the
    function is refused to archives all the same and leaves them to a later upgrade."""
    sealed = "SELECT chunk FROM sealed_chunks ORDER BY 1"
    assert "2 new messages" in team.run("alice", "ingest").stdout
    team.sql(f"SELECT setval('messages_id_seq', {2 * CHUNK - 2})")
    _session(team.clone, "s2", "the quokka deploys", "a cache of quokkas")
    assert "2 new messages" in team.run("alice", "ingest").stdout
    assert team.sql(sealed, role="rita") == [(0,), (1,)]
    assert team.sql("SELECT chunk, ids FROM postings WHERE lexeme = 'zanzibar'", role="rita") == [
        (0, [1])
    ]
    for statement in ("DELETE FROM postings", "INSERT INTO sealed_chunks VALUES (9)"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            team.sql(statement, role="alice")
    team.sql(
        "REVOKE EXECUTE ON FUNCTION subrosa_seal_chunk(integer) FROM PUBLIC", role="subrosa_owner"
    )
    team.sql(f"SELECT setval('messages_id_seq', {4 * CHUNK - 2})")
    _session(team.clone, "s3", "the newest words", "in chunk four")
    assert "2 new messages" in team.run("alice", "ingest").stdout
    assert team.sql(sealed) == [(0,), (1,)]
    assert "postings: 2 of 4 complete chunks" in team.run("alice", "doctor").stdout
    team.run("subrosa_owner", "db", "upgrade")
    assert team.sql(sealed) == [(0,), (1,), (2,), (3,)]


def test_a_readers_mcp_remember_is_one_sentence(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The MCP server's tools as the reader: search answers; remember, which writes a
    # fact, is refused in the CLI's sentence (not "subrosa failed on remember:
    # ProgrammingError: … [SQL: INSERT …]" with a traceback on stderr), and no leaf stays.
    from tests.test_mcp import calls

    team.run("alice", "ingest")
    for key, value in team.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SUBROSA_DB", team.url("rita", password=True))
    monkeypatch.chdir(team.clone)
    memory = team.clone / ".claude" / "memory"
    before = sorted(p.name for p in memory.glob("*.md"))
    arguments = {"slug": "rita_note", "type": "project", "description": "A note.", "body": "x"}
    [(found, failed), (said, refused)] = calls(
        ("search", {"query": "zanzibar"}), ("remember", arguments)
    )
    assert not failed and "zanzibar" in found
    assert refused and "permission denied for table facts" in said, said
    assert "this database role may not do what the command needs" in said, said
    assert "rita:***@" in said and PASSWORD not in said and "[SQL" not in said, said
    assert sorted(p.name for p in memory.glob("*.md")) == before


def test_a_readers_clone_that_has_not_pulled_keeps_the_members_changes(team: Team) -> None:
    """Rita reads from a clone of her own. Alice pins a fact and pushes; Rita has not
    pulled, so her sidecar still holds it unpinned: her `generate` keeps the pin (and
    writes nothing to the server, which it may not) rather than failing on a change it
    would undo."""
    memory = team.clone / ".claude" / "memory"
    write_leaf(memory, "zanzibar_cache.md", "The zanzibar cache.")
    team.run("alice", "generate")
    mine = team.clone.parent / "rita" / "repo"
    shutil.copytree(team.clone, mine)  # her clone, with what the push carried
    rita = dict(team.env, SUBROSA_DB=team.url("rita"), SUBROSA_USER="rita",
                SUBROSA_MEMORY_DIR=str(mine / ".claude" / "memory"))  # fmt: skip
    assert subrosa_forked("generate", env=rita, cwd=mine).returncode == 0
    team.run("alice", "fact", "pin", "zanzibar_cache")

    result = subrosa_forked("generate", env=rita, cwd=mine)
    assert result.returncode == 0, result.stderr.decode()
    assert team.sql("SELECT pinned FROM facts") == [(True,)]
    assert (
        '"pinned": true' in (mine / ".claude" / "memory" / ".subrosa" / "facts.jsonl").read_text()
    )
