"""The daily memory loop (issue 13): one memory dir for hooks and commands, a mark that
means "extracted", each hook once when registered twice, the index injected by rank,
line headroom, `fact forget`, and the MEMORY.md Claude Code writes by itself.

What concerns the real Claude Code is in tests/e2e/; these are the same rules on crafted
inputs, without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subrosa.claude import checkpoint
from subrosa.claude.hooks import CONTEXT_CAP, render_ranked
from subrosa.memory.marker import read_ranking
from subrosa.memory.witness import load as load_witness
from subrosa.paths import auto_memory_dir, encode_project_path, resolve_memory_dir
from tests.conftest import RunCli, write_leaf
from tests.test_hooks import context_of, event, grow, hook, prompt, transcript

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


@pytest.fixture(autouse=True)
def no_background_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "0")


def git(*args: str, cwd: Path) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def repository(root: Path) -> Path:
    """A git repository with one commit, at `root`."""
    root.mkdir(parents=True)
    git("init", "-q", cwd=root)
    (root / "README").write_text("x\n")
    git("add", "README", cwd=root)
    git("commit", "-qm", "first", cwd=root)
    return root


# --- one memory dir, wherever a command runs ---------------------------------------------


def test_every_folder_of_a_project_resolves_the_same_memory_dir(
    tmp_path: Path, isolated_env: Path
) -> None:
    repo = repository(tmp_path / "repo")
    deep = repo / "src" / "api"
    deep.mkdir(parents=True)
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature", cwd=repo)
    env = {"HOME": str(isolated_env), "CLAUDE_CONFIG_DIR": str(isolated_env / ".claude")}
    auto = isolated_env / ".claude" / "projects" / encode_project_path(repo) / "memory"
    places = [repo, deep, tmp_path / "wt", tmp_path / "wt"]
    witness = load_witness()

    def resolved(place: Path, **extra: str) -> Path:
        here = Path(resolve_memory_dir(cwd=place, env={**env, **extra}))
        assert witness.default_dir({**env, **extra}, cwd=str(place)) == here, place
        return here

    # No .claude/memory: Claude Code's auto-memory dir of the repository, from everywhere.
    assert {resolved(p) for p in places} == {auto}
    # The repository keeps one (untracked, so the worktree has none of its own).
    memory = repo / ".claude" / "memory"
    memory.mkdir(parents=True)
    assert {resolved(p) for p in places} == {memory}
    # Hooks get CLAUDE_PROJECT_DIR (where Claude Code started); commands may not.
    assert resolved(tmp_path, CLAUDE_PROJECT_DIR=str(deep)) == memory
    # A worktree with a memory of its own (committed on its branch) uses that one.
    own = tmp_path / "wt" / ".claude" / "memory"
    own.mkdir(parents=True)
    assert resolved(tmp_path / "wt") == own
    # The nearest wins: a package of a monorepo with its own memory.
    package = deep / ".claude" / "memory"
    package.mkdir(parents=True)
    assert resolved(deep) == package and resolved(repo) == memory
    # SUBROSA_MEMORY_DIR wins over all (SessionStart exports it for the Bash tool).
    assert resolved(deep, SUBROSA_MEMORY_DIR=str(memory)) == memory


def test_outside_a_checkout_only_the_folder_itself_counts(
    tmp_path: Path, isolated_env: Path
) -> None:
    (tmp_path / ".claude" / "memory").mkdir(parents=True)
    below = tmp_path / "notes"
    below.mkdir()
    env = {"HOME": str(isolated_env)}
    assert Path(resolve_memory_dir(cwd=tmp_path, env=env)) == tmp_path / ".claude" / "memory"
    assert Path(resolve_memory_dir(cwd=below, env=env)) == Path(auto_memory_dir(below, env))


def test_fact_list_in_a_subfolder_lists_the_projects_facts(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "db.sqlite"))
    repo = repository(tmp_path / "repo")
    memory = repo / ".claude" / "memory"
    memory.mkdir(parents=True)
    write_leaf(memory, "user_prefers_pnpm.md")
    monkeypatch.chdir(repo)
    run("fact", "upsert", "--leaf", "user_prefers_pnpm.md", "--hook", "pnpm")
    (repo / "src").mkdir()
    monkeypatch.chdir(repo / "src")
    listed = json.loads(run("fact", "list", "--json").stdout)
    assert [f["slug"] for f in listed] == ["user_prefers_pnpm"]


def test_session_start_exports_the_memory_dir_for_the_sessions_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = tmp_path / "it's memory"  # a quote in the path, for the shell
    memory.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    env_file = tmp_path / "session-env" / "sessionstart-hook-0.sh"
    env_file.parent.mkdir()
    env_file.write_text("export OTHER=1\n")
    monkeypatch.setenv("CLAUDE_ENV_FILE", str(env_file))
    path = transcript(tmp_path, "s1")
    hook("session-start", event("s1", path, tmp_path, source="startup"))
    hook("session-start", event("s1", grow(path), tmp_path, source="resume"))
    text = env_file.read_text()
    assert text.startswith("export OTHER=1\n") and text.count("SUBROSA_MEMORY_DIR") == 1
    sourced = subprocess.run(
        ["sh", "-c", f'. "{env_file}"; printf %s "$SUBROSA_MEMORY_DIR"'],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert sourced.stdout == str(memory)


def test_checkpoint_mark_marks_the_session_it_runs_in(
    memory_dir: Path, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, newest = claude_transcript(tmp_path, "mine"), claude_transcript(tmp_path, "newest")
    hook("session-start", event("mine", mine, tmp_path))
    hook("session-start", event("newest", newest, tmp_path))  # another session, started later
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "mine")  # what Claude Code gives its Bash tool
    assert json.loads(run("checkpoint-mark", "--json").stdout)["session_id"] == "mine"


def test_the_auto_memory_dir_is_created_for_the_hooks_state(
    tmp_path: Path, isolated_env: Path
) -> None:
    """Claude Code 2.1 creates `projects/<project>/` only with the first transcript (and
    never for the repository when started in a subfolder): the hooks create it."""
    project = tmp_path / "project"
    project.mkdir()
    (isolated_env / ".claude").mkdir()
    memory = Path(auto_memory_dir(project))
    assert not memory.parent.exists()
    path = transcript(tmp_path, "s1")
    result = hook("session-start", event("s1", path, project))
    assert result.stderr == "" and checkpoint.live_session(memory) is not None


# --- a mark means "extracted" -------------------------------------------------------------


def tool_result(text: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]
    return {"type": "user", "message": {"role": "user", "content": content}}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}


def bash_call(command: str) -> dict[str, Any]:
    return assistant({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": command}})


def extraction_tail() -> list[dict[str, Any]]:
    """What Claude Code 2.1 appends after `checkpoint-mark` read the transcript's size,
    to the end of that turn (shapes as docs/testing.md records them)."""
    snapshot = {"type": "attachment", "attachment": {"type": "prompt_snapshot", "x": "u" * 50_000}}
    return [
        tool_result("marked s1: extraction covers 20985 bytes"),
        snapshot,
        {"type": "api-request", "requestId": "r1"},
        {"type": "api-request-blob", "message": {"role": "user", "content": "user text, logged"}},
        bash_call("subrosa checkpoint-clear"),
        {"type": "last-prompt", "lastPrompt": "Run the memory-extraction skill now."},
        {"type": "atis-latch"},
        tool_result("cleared 0 queued sessions"),
        assistant({"type": "text", "text": "Extraction done."}),
        {"type": "system", "subtype": "stop_hook_summary"},
        {
            "type": "user",
            "isMeta": True,
            "message": {"role": "user", "content": "Stop hook feedback:\nsomething"},
        },
        {"type": "last-prompt", "lastPrompt": "Run the memory-extraction skill now."},
        {"type": "cost-state", "cost": 0.01},
    ]


def claude_transcript(cwd: Path, sid: str) -> Path:
    """A transcript where Claude Code keeps those of sessions started in `cwd`."""
    path = Path(auto_memory_dir(cwd)).parent / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def session_with_mark(tmp_path: Path, run: RunCli, sid: str = "s1") -> Path:
    path = grow(claude_transcript(tmp_path, sid), prompt("Run the skill."))
    grow(path, bash_call(f"subrosa checkpoint-mark --session {sid}"))
    run("checkpoint-mark", "--session", sid)
    for record in extraction_tail():
        grow(path, record)
    return path


def queued(run: RunCli) -> list[str]:
    return [e["session_id"] for e in json.loads(run("checkpoint-list", "--json").stdout)]


def test_a_session_ending_after_its_extractions_own_tail_is_not_queued(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    path = session_with_mark(tmp_path, run)
    hook("session-end", event("s1", path, tmp_path, reason="other"))
    assert queued(run) == []
    context = hook("session-start", event("s2", transcript(tmp_path, "s2"), tmp_path)).stdout
    assert "ended without memory extraction" not in context


@pytest.mark.parametrize(
    "after",
    [
        [prompt("One more thing: staging moved to eu-west-2.")],
        [{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "x"}]}}],
        [{"type": "user", "message": {"role": "user", "content": [{"type": "image"}]}}],
        # A slash command that expands to a prompt, then answered.
        [prompt("<command-name>/review</command-name>"), assistant({"type": "text", "text": "…"})],
        # Typed while the extraction's turn ran and taken into it (Claude Code 2.1.332):
        # written only as a queue operation and a queued_command attachment.
        [
            {"type": "queue-operation", "operation": "enqueue", "content": "staging: eu-west-2"},
            tool_result("marked"),
            {"type": "attachment", "attachment": {"type": "queued_command", "prompt": "x"}},
            {"type": "queue-operation", "operation": "remove", "content": "staging: eu-west-2"},
            assistant({"type": "text", "text": "Noted."}),
        ],
    ],
    ids=["prompt", "text-blocks", "image", "answered-command", "queued-into-the-turn"],
)
def test_a_session_that_went_on_talking_after_the_mark_is_queued(
    memory_dir: Path, tmp_path: Path, run: RunCli, after: list[dict[str, Any]]
) -> None:
    path = session_with_mark(tmp_path, run)
    for record in after:
        grow(path, record)
    hook("session-end", event("s1", path, tmp_path, reason="other"))
    assert queued(run) == ["s1"]


def test_exit_commands_and_interruptions_alone_are_not_talk(tmp_path: Path) -> None:
    path = transcript(tmp_path, "s", "")
    for record in [
        prompt("<command-name>/exit</command-name>\n<command-message>exit</command-message>"),
        prompt("<local-command-stdout>Bye!</local-command-stdout>"),
        prompt("[Request interrupted by user]"),
        {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "x"}},
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "x"}},
    ]:
        grow(path, record)
    assert checkpoint.talked_after(str(path), 0) is False
    # A background task's notice (queued, then its own turn, answered) is no one's talk.
    notice = "<task-notification>\n<task-id>b1</task-id>\n</task-notification>"
    grow(path, {"type": "queue-operation", "operation": "enqueue", "content": notice})
    started = '{"task_id":"b5fdd2a","tool_use_id":"call_1","task_type":"local_bash"}'
    grow(path, {"type": "queue-operation", "operation": "enqueue", "content": started})
    grow(path, {"type": "queue-operation", "operation": "dequeue"})
    grow(path, prompt(notice))
    grow(path, assistant({"type": "text", "text": "The build finished."}))
    assert checkpoint.talked_after(str(path), 0) is False
    grow(path, prompt("[Request interrupted by user]"))
    grow(path, assistant({"type": "text", "text": "answering the interruption"}))
    assert checkpoint.talked_after(str(path), 0) is True


def test_a_mark_inside_a_line_and_a_half_written_last_line(tmp_path: Path) -> None:
    line = json.dumps(prompt("before the mark")) + "\n"
    path = transcript(tmp_path, "s", line)
    assert checkpoint.talked_after(str(path), len(line) // 2) is False  # the rest of that line
    with path.open("a") as handle:
        handle.write(json.dumps(prompt("written while ending"))[:20])
    assert checkpoint.talked_after(str(path), len(line)) is False


def test_a_tail_longer_than_the_limit_counts_as_talk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = transcript(tmp_path, "s", "")
    grow(path, tool_result("x" * 5_000))
    monkeypatch.setattr(checkpoint, "TAIL_LIMIT_BYTES", 1_000)
    assert checkpoint.talked_after(str(path), 0) is True
    assert checkpoint.talked_after(str(tmp_path / "gone.jsonl"), 0) is True


# --- each hook once, even registered twice ----------------------------------------------


def both_registrations(name: str, payload: dict[str, Any]) -> list[str]:
    """The same hook started twice at once, as Claude Code runs a hook that the plugin and
    settings.json both register. The stdout of each."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "subrosa", "hook", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write(json.dumps(payload).encode())
        process.stdin.close()
    outputs = []
    for process in processes:
        assert process.stdout is not None and process.stderr is not None
        outputs.append(process.stdout.read().decode())
        process.stderr.read()
        assert process.wait(timeout=60) == 0
        process.stdout.close()
        process.stderr.close()
    return outputs


def test_a_hook_registered_twice_counts_each_turn_once_and_nudges_once(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUBROSA_NUDGE_EVERY", "3")
    path = transcript(tmp_path, "s1")
    nudges = []
    for _ in range(6):
        outputs = both_registrations("stop", event("s1", grow(path), tmp_path))
        nudges.append(sum(1 for out in outputs if out.strip()))
    assert nudges == [0, 0, 1, 0, 0, 1]
    assert checkpoint.counter(memory_dir, "s1")["turns"] == 6  # type: ignore[index]


def stop_payload(session_id: str, path: Path, cwd: Path, prompt_id: str) -> dict[str, Any]:
    """Stop's input as Claude Code 2.1.213 gave it (its own shape, every key)."""
    return {
        "session_id": session_id,
        "transcript_path": str(path),
        "cwd": str(cwd),
        "prompt_id": prompt_id,
        "permission_mode": "default",
        "effort": {"level": "high"},
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "OK.",
        "background_tasks": [],
        "session_crons": [],
    }


def test_turns_that_end_at_the_same_transcript_size_each_count(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code before 2.1.332 (2.1.150, 2.1.213) writes the transcript behind the
    turn: two turns in a row may end with Stop seeing the same size. The prompt id it
    gives (since 2.1.196) tells them apart; registered twice, each is still counted once."""
    monkeypatch.setenv("SUBROSA_NUDGE_EVERY", "3")
    path = transcript(tmp_path, "s1")
    nudges = []
    for turn in range(6):  # the file never grows
        payload = stop_payload("s1", path, tmp_path, f"prompt-{turn}")
        outputs = both_registrations("stop", payload)
        nudges.append(sum(1 for out in outputs if out.strip()))
    assert nudges == [0, 0, 1, 0, 0, 1]
    assert checkpoint.counter(memory_dir, "s1")["turns"] == 6  # type: ignore[index]


def test_a_prompt_id_names_the_event_whatever_size_each_registration_saw(
    memory_dir: Path, tmp_path: Path
) -> None:
    """Claude Code 2.1.214 may write to the transcript between the two registrations'
    reads of its size (seen with the plugin and `subrosa install` together): the same
    Stop event, the same prompt id, is still claimed once."""
    path = transcript(tmp_path, "s1")
    assert checkpoint.claim_event(memory_dir, "s1", "stop", str(path), "", "prompt-1")
    grow(path)
    assert not checkpoint.claim_event(memory_dir, "s1", "stop", str(path), "", "prompt-1")
    assert checkpoint.claim_event(memory_dir, "s1", "stop", str(path), "", "prompt-2")


def test_session_start_registered_twice_injects_once(memory_dir: Path, tmp_path: Path) -> None:
    (memory_dir / "MEMORY.md").write_text("# Memory\n\n- [A](a.md) — the A fact\n")
    path = transcript(tmp_path, "s1")
    outputs = both_registrations("session-start", event("s1", path, tmp_path, source="startup"))
    assert sorted(bool(out.strip()) for out in outputs) == [False, True]
    # The same event key again, after the window: a new event (resumed twice, no prompt).
    for claim in (memory_dir / ".extract" / "once" / "s1").iterdir():
        old = time.time() - checkpoint.DUPLICATE_WINDOW_SECONDS - 1
        os.utime(claim, (old, old))
    assert "the A fact" in context_of(
        hook("session-start", event("s1", path, tmp_path, source="startup"))
    )


def test_old_event_claims_are_cleaned(memory_dir: Path, tmp_path: Path) -> None:
    hook("stop", event("old", grow(transcript(tmp_path, "old")), tmp_path))
    claims = memory_dir / ".extract" / "once" / "old"
    assert len(list(claims.iterdir())) == 1
    old = time.time() - checkpoint.ONCE_STALE_AFTER_SECONDS - 60
    os.utime(claims, (old, old))
    hook("session-end", event("new", transcript(tmp_path, "new"), tmp_path))
    assert not claims.exists()


# --- SessionStart injects by rank ----------------------------------------------------------


def project_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A memory dir Claude Code does not load itself, so SessionStart injects it."""
    memory = tmp_path / "project" / ".claude" / "memory"
    memory.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "db.sqlite"))
    return memory


def test_a_pinned_fact_shown_last_is_injected_first(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = project_memory(tmp_path, monkeypatch)
    for n in range(150):
        write_leaf(memory, f"project_fact_{n:03d}.md", f"Project fact number {n:03d}, " + "x" * 40)
    write_leaf(memory, "zz_guardrail.md", "Never deploy on Fridays, GUARDRAIL.", "feedback")
    run("generate")
    run("fact", "pin", "--leaf", "zz_guardrail.md")
    run("fact", "move", "zz_guardrail", "--after", "project_fact_149")
    run("generate")
    index = (memory / "MEMORY.md").read_text()
    assert len(index) > CONTEXT_CAP and "GUARDRAIL" in index.rstrip().splitlines()[-1]
    assert read_ranking(memory)[0] == "zz_guardrail.md"  # type: ignore[index]

    path = transcript(tmp_path, "s1")
    context = context_of(hook("session-start", event("s1", path, tmp_path)))

    assert "GUARDRAIL" in context
    shown = [line for line in context.splitlines() if line.startswith("- [")]
    assert shown[-1].startswith("- [Zz Guardrail]")  # still in MEMORY.md's own order
    left = sum(1 for line in index.splitlines() if line.startswith("- [")) - len(shown)
    assert f"[… {left} more facts of the index, ranked lower, are not shown here" in context
    assert "`subrosa search WORDS`" in context


ITEM = st.text(alphabet="abc xyz—", min_size=0, max_size=120)


@given(
    items=st.lists(st.tuples(ITEM, st.booleans()), max_size=60),
    order=st.randoms(use_true_random=False),
    budget=st.integers(min_value=0, max_value=4_000),
)
def test_the_ranked_index_fits_its_budget_and_keeps_the_top_fact(
    items: list[tuple[str, bool]], order: Any, budget: int
) -> None:
    lines = ["# Memory index (generated by subrosa)", "One line per fact.", ""]
    targets = []
    for n, (hook_text, heading) in enumerate(items):
        if heading:
            lines += ["", f"## Section {n}"]
        lines.append(f"- [Fact {n}](fact_{n}.md) — {hook_text}")
        targets.append(f"fact_{n}.md")
    ranking = list(targets)
    order.shuffle(ranking)
    index = Path("/m/MEMORY.md")
    out = render_ranked(lines, ranking, index, "why", budget)
    if out is None:
        return
    assert len(out) <= budget
    shown = [line for line in out.split("\n") if line.startswith("- [Fact ")]
    numbers = [int(line.split()[2].rstrip("]").split("]")[0]) for line in shown]
    assert numbers == sorted(numbers)  # MEMORY.md's order
    left = len(targets) - len(shown)
    if left:
        assert f"[… {left} more fact" in out.split("\n")[-1]
    if not ranking:
        return
    # The top-ranked fact is shown whenever it fits with its heading and the last line.
    number = int(ranking[0][5:-3])
    top = f"- [Fact {number}]"
    block = [line for line in lines if line.startswith(top)]
    # Its section's heading comes with it: the last heading at or above it, not only one
    # right above it (a fact further down a section was thought to need none).
    section = max(
        (n for n, (_, heading) in enumerate(items[: number + 1]) if heading), default=None
    )
    if section is not None:
        block = ["", f"## Section {section}", *block]
    alone = render_ranked([*lines[:3], *block], [], index, "why", 100_000)
    pointer = (
        f"[… {len(targets)} more facts of the index, ranked lower, are not shown here for "
        f"room: read {index}, or run `subrosa search WORDS`.]"
    )
    if alone is not None and len(alone) + 2 + len(pointer) <= budget:
        assert any(line.startswith(top) for line in shown)


# --- line headroom ---------------------------------------------------------------------


def test_generate_leaves_headroom_that_appended_lines_fit_in(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = project_memory(tmp_path, monkeypatch)
    for n in range(300):
        write_leaf(memory, f"f{n:03d}.md", f"fact {n}")
    result = json.loads(run("generate", "--json").stdout)
    assert result["lines"] <= 150 and len(result["below_budget"]) > 0
    with (memory / "MEMORY.md").open("a", encoding="utf-8") as handle:
        for n in range(40):  # what Claude Code's auto memory or a person appends meanwhile
            handle.write(f"- appended by hand {n}\n")
    verdict = json.loads(run("check", "--json").stdout)
    assert verdict["ok"] and verdict["memory_md"]["lines"] <= 190


def test_caps_over_what_claude_code_loads_are_refused(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = project_memory(tmp_path, monkeypatch)
    write_leaf(memory, "a.md")
    assert "1<=x<=200" in run("generate", "--max-lines", "1000", expect=2).stderr
    run("generate", "--budget", "25001", expect=2)
    assert not (memory / "MEMORY.md").exists()
    run("generate", "--max-lines", "200")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "subrosa" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("max_lines = 300\n")
    assert "max_lines must be at most 200" in run("generate", expect=2).stderr
    config.write_text("")
    monkeypatch.setenv("SUBROSA_MAX_LINES", "201")
    assert "at most 200" in run("generate", expect=2).stderr


def test_the_witness_counts_lines_as_claude_code_loads_them(tmp_path: Path, run: RunCli) -> None:
    lines = [f"line {n} \u2028 with\x85 odd\x0c breaks\r" for n in range(151)]
    (tmp_path / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    verdict = json.loads(run("check", "--dir", str(tmp_path), "--json").stdout)
    assert verdict["memory_md"]["lines"] == 151
    (tmp_path / "MEMORY.md").write_text("a\nno newline at the end", encoding="utf-8")
    assert (
        json.loads(run("check", "--dir", str(tmp_path), "--json").stdout)["memory_md"]["lines"] == 2
    )


# --- fact forget ---------------------------------------------------------------------------


def facts_by_slug(run: RunCli) -> dict[str, dict[str, Any]]:
    return {f["slug"]: f for f in json.loads(run("fact", "list", "--all", "--json").stdout)}


def test_forget_drops_one_fact_and_touches_no_other(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for slug in ("gone", "kept"):
        write_leaf(memory_dir, f"{slug}.md", f"The {slug} fact about ZEBRA.")
        run("fact", "upsert", "--leaf", f"{slug}.md", "--hook", f"{slug} ZEBRA")
    run("search", "ZEBRA")
    run("search", "ZEBRA")
    before = facts_by_slug(run)["kept"]
    assert before["hits"] == 2
    (memory_dir / "gone.md").unlink()
    assert "subrosa fact forget gone" in run("generate").stderr

    assert "forgot gone" in run("fact", "forget", "gone").stdout

    assert facts_by_slug(run) == {"kept": before}
    assert "gone" not in (memory_dir / ".subrosa" / "facts.jsonl").read_text()
    assert "leaf is gone" not in run("generate").stderr
    run("fact", "forget", "gone", expect=2)  # no such fact any more


def test_forget_with_the_leaf_still_there(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "a.md")
    run("fact", "upsert", "--leaf", "a.md", "--hook", "a")
    assert "--delete-leaf" in run("fact", "forget", "a", expect=2).stderr
    run("fact", "forget", "a", "--delete-leaf", input="n\n", expect=1)  # asked, said no
    assert (memory_dir / "a.md").exists() and "a" in facts_by_slug(run)
    data = json.loads(run("fact", "forget", "a.md", "--delete-leaf", "--yes", "--json").stdout)
    assert data["leaf_deleted"] and not (memory_dir / "a.md").exists()
    assert facts_by_slug(run) == {}


# --- the MEMORY.md Claude Code writes by itself ---------------------------------------------


CLAUDE_CODE_INDEX = (
    "- [loose_note](loose_note.md)\n"
    "- [project_release](project_release.md) — The release is ZEBRAFISH.\n"
    "- [user_prefers_pnpm](user_prefers_pnpm.md) — The user installs packages with pnpm.\n"
)


def claude_code_memory(memory: Path) -> None:
    """Leaves, and the MEMORY.md Claude Code 2.1 wrote for them at session start (as the
    e2e run shows: `- [stem](file.md) — description`, sorted, no header)."""
    write_leaf(memory, "user_prefers_pnpm.md", "The user installs packages with pnpm.", "user")
    write_leaf(memory, "project_release.md", "The release is ZEBRAFISH.")
    (memory / "loose_note.md").write_text("no frontmatter here\n")
    (memory / "MEMORY.md").write_text(CLAUDE_CODE_INDEX)


def test_generate_replaces_the_index_claude_code_wrote_from_the_leaves(
    memory_dir: Path, run: RunCli
) -> None:
    claude_code_memory(memory_dir)
    assert json.loads(run("doctor", "--json", expect=None).stdout)["checks"][3]["ok"]
    result = json.loads(run("generate", "--json").stdout)
    assert result["replaced_claude_index"] is True
    assert sorted(result["adopted"]) == ["loose_note", "project_release", "user_prefers_pnpm"]
    assert "generated by subrosa" in (memory_dir / "MEMORY.md").read_text()
    run("check")


def test_an_index_someone_changed_is_theirs_and_adopt_is_named(
    memory_dir: Path, run: RunCli
) -> None:
    claude_code_memory(memory_dir)
    edited = CLAUDE_CODE_INDEX.replace("ZEBRAFISH.", "ZEBRAFISH, ships 2026-12-01.")
    (memory_dir / "MEMORY.md").write_text(edited)
    result = run("generate", expect=1)
    assert f"subrosa adopt {memory_dir}" in result.stderr
    assert (memory_dir / "MEMORY.md").read_text() == edited


# --- plugin and install both active ------------------------------------------------------


def enable_plugin(settings: Path, on: bool = True) -> None:
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enabledPlugins": {"subrosa@subrosa-market": on}}))


def test_install_and_doctor_see_the_enabled_plugin(
    tmp_path: Path, run: RunCli, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "db.sqlite"))
    user_settings = isolated_env / ".claude" / "settings.json"

    def hooks_check() -> dict[str, Any]:
        checks = json.loads(run("doctor", "--json", expect=None).stdout)["checks"]
        return next(c for c in checks if c["name"] == "hooks")  # type: ignore[no-any-return]

    enable_plugin(user_settings)
    only_plugin = hooks_check()
    assert only_plugin["ok"] and "plugin subrosa@subrosa-market enabled" in only_plugin["detail"]

    result = run("install")
    assert "the subrosa plugin is enabled too (subrosa@subrosa-market" in result.stderr
    assert "claude plugin disable subrosa@subrosa-market" in result.stderr
    both = hooks_check()
    assert not both["ok"] and both["severity"] == "warning"
    assert "registered twice" in both["detail"] and "--uninstall --scope project" in both["fix"]

    enable_plugin(project / ".claude" / "settings.local.json", on=False)  # local overrides
    only_install = hooks_check()
    assert only_install["ok"] and "`subrosa install`" in only_install["detail"]
    assert "the subrosa plugin" not in run("install").stderr


def test_the_plugins_session_start_warns_when_install_registered_the_hooks_too(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    run("install")
    memory = project / ".claude" / "memory"
    memory.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    payload = event("s1", transcript(tmp_path, "s1"), project)
    assert hook("session-start", payload).stdout == ""  # install's own hook: nothing to say
    monkeypatch.setenv("CLAUDE_PLUGIN_ROOT", str(tmp_path / "plugin"))
    output = json.loads(hook("session-start", {**payload, "session_id": "s2"}).stdout)
    assert "registered twice" in output["systemMessage"]
    assert str(project / ".claude" / "settings.json") in output["systemMessage"]


# --- sessions started in a subfolder ------------------------------------------------------


def test_a_subfolder_session_is_archived_with_the_repository(
    tmp_path: Path, run: RunCli, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "db.sqlite"))
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(tmp_path / "memory"))
    (tmp_path / "memory").mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "src"
    sub.mkdir()
    projects = isolated_env / ".claude" / "projects"
    for cwd, word in ((sub, "KOOKABURRA"), (repo, "WOMBAT")):
        folder = projects / encode_project_path(cwd)
        folder.mkdir(parents=True)
        record = {**prompt(f"remember {word}"), "cwd": str(cwd), "sessionId": word.lower()}
        (folder / f"{word.lower()}.jsonl").write_text(json.dumps(record) + "\n")
    monkeypatch.chdir(repo)
    run("ingest")
    for place in (repo, sub):
        monkeypatch.chdir(place)
        for word in ("KOOKABURRA", "WOMBAT"):
            hits = json.loads(run("search", "--json", word).stdout)
            assert [h["session_id"] for h in hits] == [word.lower()], (place, word)
            assert hits[0]["project"] == encode_project_path(repo)


# --- the skills say what documents 000, 002 and 003 say -----------------------------------


def test_the_skills_carry_the_documents_rules() -> None:
    from subrosa.resources import skills_dir

    extraction = (skills_dir() / "memory-extraction" / "SKILL.md").read_text(encoding="utf-8")
    for rule in (
        "conventions",  # 002: code patterns, conventions, file paths, architecture
        "commit hashes",
        "PR numbers",
        "ticket numbers without the context",
        "CLAUDE.md instead",  # 002: the answer to "save this" for excluded content
        "even when the user says",
        "closed or superseded",  # 002: a ticket the conversation shows closed
        "Task/subagent",  # 000: never as a subagent
        "`.extract/`",  # 000: the hooks' state, not the skill's
        "absolute",  # 000/002: relative dates made absolute
        "always",
    ):
        assert rule in extraction, rule
    compact = (skills_dir() / "memory-compact" / "SKILL.md").read_text(encoding="utf-8")
    for rule in (
        "--check",  # 003: the witness-only mode
        "## Finding the store",
        "-work-myproj",
        "AskUserQuestion",  # 003: deletion needs sign-off
        "⚠",  # 003: merge is not delete
        "150 lines",
    ):
        assert rule in compact, rule


def test_the_stop_nudge_asks_for_what_the_skill_does() -> None:
    from subrosa.claude.hooks import nudge_reason

    reason = nudge_reason("sid", 15, Path("/m"))
    steps = ["memory-extraction", "subrosa fact upsert", "subrosa generate",
             "subrosa checkpoint-mark --session sid", "subrosa checkpoint-clear"]  # fmt: skip
    places = [reason.index(step) for step in steps]
    assert places == sorted(places)
    assert "even when nothing" in reason and "only run" not in reason
