"""A team on one PostgreSQL server, with the real Claude Code writing the transcripts
(docs/team.md, "Setting up a team, step by step"): two members, each with a HOME of
their own and a clone of one repository at another path, its remote spelled another
way, run sessions; the SessionEnd hook's background ingest archives each on the
server, and search, `transcript list --by` and `transcript show` in either clone
find both members' sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Db
from tests.e2e.claude_code import ClaudeCode, ClaudeProject, wait_for
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.engines("postgresql")]


def _member(
    claude_code: ClaudeCode, api: FakeAnthropic, root: Path, subrosa_bin: Path, remote: str
) -> ClaudeProject:
    cc = ClaudeProject(claude_code, api, root, subrosa_bin)
    cc.git("remote", "add", "origin", remote)
    (cc.project / ".claude" / "memory").mkdir(parents=True)
    return cc


def test_two_members_clones_archive_into_one_server_and_find_each_others_sessions(
    claude_code: ClaudeCode, api: FakeAnthropic, subrosa_bin: Path, tmp_path: Path, db: Db
) -> None:
    alice = _member(
        claude_code, api, tmp_path / "alice", subrosa_bin, "git@github.com:org/repo.git"
    )
    bob = _member(
        claude_code, api, tmp_path / "bob" / "w", subrosa_bin, "https://github.com/org/repo"
    )
    # Alice names the server in her settings file, Bob in SUBROSA_DB (the hooks, and the
    # ingest they start, inherit Claude Code's environment).
    settings = alice.home / ".config" / "subrosa" / "config.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text(f'db = "{db.url}"\n', encoding="utf-8")
    alice_env = {"USER": "alice", "LOGNAME": "alice"}
    bob_env = {"USER": "bob", "LOGNAME": "bob", "SUBROSA_DB": db.url}
    alice.subrosa("install", env=alice_env)
    bob.subrosa("install", env=bob_env)

    api.respond_text("The zanzibarite adder sums two ints.")
    first = alice.run("Explain the zanzibarite adder", env=alice_env).session_id
    api.respond_text("quokkaflux multiplies instead.")
    second = bob.run("Add a quokkaflux multiplier", env=bob_env).session_id

    def archived(cc: ClaudeProject, env: dict[str, str]) -> list[str] | None:
        listed = cc.subrosa_json("transcript", "list", env=env)
        ids = sorted(s["session_id"] for s in listed)
        return ids if len(ids) == 2 else None

    assert wait_for(lambda: archived(alice, alice_env), "both sessions on the server") == sorted(
        [first, second]
    )
    for cc, env, word, session in (
        (alice, alice_env, "quokkaflux", second),
        (bob, bob_env, "zanzibarite", first),
    ):
        found = cc.subrosa_json("search", "--transcripts", word, env=env)
        assert {hit["session_id"] for hit in found} == {session}, found
        assert {hit["project"] for hit in found} == {"github.com/org/repo"}
    by_bob = alice.subrosa_json("transcript", "list", "--by", "bob", env=alice_env)
    assert [(s["session_id"], s["username"]) for s in by_bob] == [(second, "bob")]
    shown = bob.subrosa_json("transcript", "show", first, env=bob_env)
    assert [m["text"] for m in shown["messages"]][0] == "Explain the zanzibarite adder"
    # Nothing on either machine's own SQLite file: every command went to the server.
    for cc in (alice, bob):
        assert not list((cc.home / ".local" / "share").rglob("*.db"))
