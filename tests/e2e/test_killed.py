"""A session that ends without Claude Code's say-so: interrupted (Ctrl-C, SIGINT), its
terminal closed (SIGHUP), stopped (SIGTERM), or killed outright (SIGKILL: the OOM
killer, a crash, a power cut). Claude Code 2.1.332 runs SessionEnd on the first three,
mid-turn too; on SIGKILL nothing runs, and the session is archived when the next one of
its project ends (`ingest --pending` reads the ended session's folder)."""

from __future__ import annotations

import signal

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


@pytest.mark.xfail(
    strict=True,
    reason="SIGKILL runs no SessionEnd: the session is not queued for extraction (noticing "
    "a session that never ended needs a rule for how long one may sit idle)",
)
def test_a_session_killed_outright_is_queued_by_the_next_one(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    sid = killed_mid_turn(cc, api, signal.SIGKILL)
    cc.run("hello")  # the next session starts and ends normally

    assert sid in [e["session_id"] for e in cc.subrosa_json("checkpoint-list")]
