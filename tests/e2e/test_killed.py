"""A session that ends without Claude Code's say-so: interrupted (Ctrl-C, SIGINT), its
terminal closed (SIGHUP), stopped (SIGTERM), or killed outright (SIGKILL: the OOM
killer, a crash, a power cut). Claude Code 2.1.332 runs SessionEnd on the first three,
mid-turn too; on SIGKILL nothing runs: the session is queued by the next one of its
project to start (its recorded Claude Code process is gone) and archived when that one
ends (`ingest --pending` reads the ended session's folder)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.claude_code import ClaudeProject, wait_for
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def killed_mid_turn(cc: ClaudeProject, api: FakeAnthropic, how: signal.Signals) -> str:
    """A session whose second turn runs a long Bash command when `how` reaches Claude
    Code; its id."""
    marker = cc.root / "tmp" / "running"
    with cc.conversation() as talk:
        api.respond_text("Answer AARDVARK.")
        talk.say("Prompt AARDVARK.")
        api.respond_bash(f"touch {marker}; sleep 60")
        talk.send("Prompt BADGER, then sleep.")
        wait_for(lambda: marker.exists() or None, "the command to start")
        talk.process.send_signal(how)
        talk.process.wait(timeout=60)
    return talk.session_id


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM], ids=str)
def test_a_session_stopped_mid_turn_is_archived_and_queued(
    cc: ClaudeProject, api: FakeAnthropic, how: signal.Signals
) -> None:
    cc.subrosa("install")
    sid = killed_mid_turn(cc, api, how)

    hits = wait_for(lambda: cc.subrosa_json("search", "--transcripts", "BADGER"), "the archive")
    assert [(h["session_id"], h["role"]) for h in hits] == [(sid, "user")]
    assert [e["session_id"] for e in cc.subrosa_json("checkpoint-list")] == [sid]


def test_a_session_killed_outright_is_archived_when_the_next_one_ends(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """SIGKILL runs no SessionEnd, so nothing names the killed session's transcript; the
    background ingest the next session's end starts reads the project's folder too."""
    cc.subrosa("install")
    sid = killed_mid_turn(cc, api, signal.SIGKILL)
    cc.run("hello")  # the next session starts and ends normally

    hits = wait_for(lambda: cc.subrosa_json("search", "--transcripts", "BADGER"), "the archive")
    assert [(h["session_id"], h["role"]) for h in hits] == [(sid, "user")]


# A week and a day: past the quiet time after which a session whose process cannot be
# checked counts as ended (subrosa.claude.checkpoint.QUIET_AFTER_SECONDS).
QUIET = 8 * 24 * 3600


def running_record(cc: ClaudeProject, session_id: str) -> Path:
    """The hooks' record of a session not yet seen to end (`.extract/running/`)."""
    found = sorted(cc.root.glob(f"**/.extract/running/{session_id}.json"))
    assert len(found) == 1, found
    return found[0]


def test_a_session_killed_outright_is_queued_by_the_next_one(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """SessionStart recorded the session's Claude Code process (CLAUDE_PID); the next
    session's start finds it gone and queues the session, once: cleared, it stays so.

    Claude Code 2.1.150 gives its hooks no CLAUDE_PID (2.1.332 does): nothing to check
    the process by, so the session counts as ended once quiet for a week; here it is
    made to look so."""
    cc.subrosa("install")
    sid = killed_mid_turn(cc, api, signal.SIGKILL)
    record = running_record(cc, sid)
    data = json.loads(record.read_text())
    if data["pid"] is None:
        assert not cc.claude.at_least("2.1.332"), data
        cc.run("hello")  # not quiet long enough yet
        assert sid not in [e["session_id"] for e in cc.subrosa_json("checkpoint-list")]
        cc.subrosa("checkpoint-clear")
        week_ago = time.time() - QUIET
        record.write_text(json.dumps({**data, "started_at": week_ago}))
        for path in (record, cc.transcript(sid)):
            os.utime(path, (week_ago, week_ago))
    first = cc.run("hello")  # the next session starts and ends normally

    listed = cc.subrosa_json("checkpoint-list")
    assert sorted(e["session_id"] for e in listed) == sorted([sid, first.session_id])
    assert [e["reason"] for e in listed if e["session_id"] == sid] == ["killed"]
    cc.subrosa("checkpoint-clear")
    second = cc.run("hello again")
    assert [e["session_id"] for e in cc.subrosa_json("checkpoint-list")] == [second.session_id]


def test_a_session_idle_in_another_terminal_is_not_queued(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """A session that said nothing for a while is not one that ended: another session
    of the project starting and ending beside it leaves it off the queue."""
    cc.subrosa("install")
    with cc.conversation() as idle:
        api.respond_text("Answer AARDVARK.")
        idle.say("Prompt AARDVARK.")
        other = cc.run("hello")  # meanwhile, in another terminal
        assert [e["session_id"] for e in cc.subrosa_json("checkpoint-list")] == [other.session_id]
    listed = cc.subrosa_json("checkpoint-list")
    assert sorted(e["session_id"] for e in listed) == sorted([idle.session_id, other.session_id])
