"""`subrosa search` finds what a person asks for (issue 12): the two tiers, stopwords,
English forms, identifiers, copies, tool output, sessions, the stable uuid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli, write_leaf
from tests.test_archive import _ingest, _record, _search, _transcript

# Every test here that uses the database runs on SQLite and on PostgreSQL.
pytestmark = pytest.mark.engines


def _uuids(results: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("uuid") or r.get("slug")) for r in results]


def test_every_word_first_then_some_never_empty(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("both", "the cache invalidation bug is back", session="s-1"),
        _record("cache", "we cleared the cache twice", role="assistant", session="s-2"),
        _record("bug", "found a bug in the parser", role="assistant", session="s-3"),
        _record("none", "nothing to see here", session="s-4"),
    )
    _ingest(run)
    found = _search(run, "cache bug")
    assert _uuids(found) == ["both", "cache", "bug"] or _uuids(found) == ["both", "bug", "cache"]
    assert [r["match"] for r in found] == ["all", "some", "some"]
    # Words that never meet in one message: the second tier, never nothing.
    apart = _search(run, "cleared parser")
    assert set(_uuids(apart)) == {"cache", "bug"} and {r["match"] for r in apart} == {"some"}
    assert _search(run, "zanzibarite") == []  # no word of it archived: nothing
    # A word that is not there whole, with parts that are: found by its parts.
    assert set(_uuids(_search(run, "invalidation-parser"))) == {"both", "bug"}
    text = run("search", "cleared", "parser").stdout
    assert "(some words)" in text
    # The second tier only fills up to --limit.
    assert _uuids(_search(run, "cache bug", "--limit", "1")) == ["both"]


def test_cjk_by_its_pairs_and_characters(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("toc", "目录中的页码不对应实际页面", session="s-1"),
        _record("other", "页面加载太慢", session="s-2"),
    )
    _ingest(run)
    found = _search(run, "目录", "页码", "对不上")  # 对不上 is nowhere as typed
    assert _uuids(found)[0] == "toc" and found[0]["match"] == "some"
    assert _uuids(_search(run, "目录页码对不上"))[0] == "toc"  # one run, absent whole
    assert _search(run, "塔") == []


def test_stopwords_never_empty_a_result(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("m1", "Docker versus Podman: rootless containers win"),
        _record("m2", "to be or not to be"),
    )
    _ingest(run)
    found = _search(run, "how", "to", "run", "docker", "vs", "podman", "with", "the", "cli")
    assert _uuids(found)[0] == "m1"
    assert found[0]["match"] == "some"  # "run" and "cli" are nowhere
    assert _uuids(_search(run, "docker", "vs", "podman"))[0] == "m1"
    assert _search(run, "docker", "vs", "podman")[0]["match"] == "all"
    # A query of stopwords alone requires them.
    assert [r["match"] for r in _search(run, "to", "be", "or", "not")] == ["all"]
    # A stopword is a word too: when nothing else of the query is there, it is found.
    assert _uuids(_search(run, "to", "zanzibarite")) == ["m2"]


def test_english_forms_and_the_exact_one_first(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("plural", "the hosting costs went up", timestamp="2026-03-01T10:00:00Z"),
        _record("exact", "what does the hosting cost", timestamp="2026-03-01T10:01:00Z"),
        _record("tiling", "tiling the map took an hour", timestamp="2026-03-01T10:02:00Z"),
        _record("freeze", "the UI freezes on load", timestamp="2026-03-01T10:03:00Z"),
    )
    _ingest(run)
    assert _uuids(_search(run, "cost")) == ["exact", "plural"]
    assert _uuids(_search(run, "costs")) == ["plural", "exact"]
    assert _uuids(_search(run, "tiles")) == ["tiling"]
    assert _uuids(_search(run, "freeze")) == ["freeze"]
    assert "**tiling**" in _search(run, "tiles")[0]["snippet"]
    # A phrase and a prefix keep their meaning.
    assert _uuids(_search(run, '"hosting cost"')) == ["exact"]
    assert _uuids(_search(run, "til*")) == ["tiling"]


def test_identifiers_by_their_parts_and_whole(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("camel", "set RealTimeProtection to false in the policy"),
        _record("kebab", "the pre-commit hook failed"),
        _record("joined", "run precommit again"),
        _record("snake", "rotate the auth_token every day"),
        _record("path", "see subrosa/archive/search.py for the ranking"),
        _record("words", "is syncing backfill enabled"),
        _record("alias", "the isSyncingBackfill alias"),
    )
    _ingest(run)
    assert _uuids(_search(run, "realtime")) == ["camel"]
    assert _uuids(_search(run, "protection")) == ["camel"]
    assert _uuids(_search(run, "RealTimeProtection")) == ["camel"]
    assert set(_uuids(_search(run, "precommit"))) == {"kebab", "joined"}
    assert set(_uuids(_search(run, "pre-commit"))) == {"kebab", "joined"}
    assert _uuids(_search(run, "auth")) == ["snake"]
    assert _uuids(_search(run, "authtoken")) == ["snake"]
    assert _uuids(_search(run, "search.py")) == ["path"]
    assert _uuids(_search(run, "archive/search.py")) == ["path"]
    assert set(_uuids(_search(run, "isSyncingBackfill"))) == {"alias", "words"}
    assert set(_uuids(_search(run, "syncing", "backfill", "alias"))[:1]) == {"alias"}


def test_words_typed_apart_find_them_joined(memory_dir: Path, run: RunCli) -> None:
    # A name written as one word ("statusline", "webhook") found by its words typed
    # apart, in the first tier; the words as typed rank above it; quoted, as written.
    _transcript(
        "s-1.jsonl",
        _record("joined", "the statusline script prints the branch", session="s-1"),
        _record("apart", "the status line prints the branch", session="s-2"),
        _record("other", "the status of the build is green", session="s-3"),
    )
    _ingest(run)
    found = _search(run, "status", "line", "branch")
    assert _uuids(found)[:2] == ["apart", "joined"]
    assert [r["match"] for r in found[:2]] == ["all", "all"]
    assert "**statusline**" in found[1]["snippet"]
    assert _uuids(_search(run, "status", "line", "script")) == ["joined", "apart", "other"]
    assert "joined" not in _uuids(_search(run, '"status"', '"line"', "branch"))[:2]
    assert _search(run, '"status"', '"line"', "branch")[0]["match"] == "all"


def test_german_forms_in_a_german_query(memory_dir: Path, run: RunCli) -> None:
    # A German query also finds the German forms of its words (deutsch: deutschen;
    # englische: Englisch), in the first tier, the exact forms first; an English query
    # never finds German forms (build is not builder).
    _transcript(
        "s-1.jsonl",
        _record("forms", "Beide Nachrichten wurden als Englisch erkannt, nicht deutschen."),
        _record("exact", "Die englische Stimme spricht deutsch.", session="s-2"),
        _record("builder", "the builder fails on arm64", session="s-3"),
    )
    _ingest(run)
    found = _search(run, "warum", "deutsch", "englische")
    assert _uuids(found) == ["exact", "forms"]
    assert [r["match"] for r in found] == ["all", "all"]
    assert "**deutschen**" in found[1]["snippet"]
    assert _uuids(_search(run, "build", "fails")) == ["builder"]
    assert _search(run, "build", "fails")[0]["match"] == "some"  # fails only
    assert _search(run, "ich", "build", "fails")[0]["match"] == "all"


def test_copies_are_one_result(memory_dir: Path, run: RunCli) -> None:
    error = "Error: ENOSPC: no space left on device, write /var/lib/docker/overlay2"
    records = [
        _record(f"copy-{i}", f"{error} (attempt {i})", session=f"s-{i % 3}") for i in range(30)
    ]
    records.append(
        _record(
            "why",
            "ENOSPC here means the docker overlay filled the disk: prune the images.",
            role="assistant",
            session="s-9",
        )
    )
    _transcript("s-1.jsonl", *records)
    _ingest(run)
    found = _search(run, "ENOSPC", "docker", "overlay", "--limit", "5")
    assert len(found) == 2
    copies = next(r for r in found if r.get("copies"))
    assert copies["copies"] == 30 and sorted(copies["copy_sessions"]) == ["s-0", "s-1", "s-2"]
    assert "why" in _uuids(found)
    assert "30 copies in 3 sessions" in run("search", "ENOSPC").stdout


def test_the_reply_to_a_pasted_error_follows_it(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("paste", "ENOSPC writing the docker overlay?", timestamp="2026-03-01T10:00:00Z"),
        _record(
            "call",
            "[Bash] df -h",
            role="assistant",
            timestamp="2026-03-01T10:00:10Z",
        ),
        _record(
            "why",
            "The disk is full: prune the docker images and the build cache.",
            role="assistant",
            timestamp="2026-03-01T10:00:20Z",
        ),
        *[
            _record(f"other-{i}", f"docker compose file {i}", timestamp="2026-03-01T11:00:00Z")
            for i in range(5)
        ],
    )
    _ingest(run)
    found = _search(run, "ENOSPC", "docker", "overlay", "--limit", "4")
    assert _uuids(found)[:2] == ["paste", "why"]
    assert [r["match"] for r in found[:2]] == ["all", "reply"]
    assert "(the reply to a match)" in run("search", "ENOSPC", "docker", "overlay").stdout


def test_the_reply_at_the_end_of_a_long_turn(memory_dir: Path, run: RunCli) -> None:
    # An agent's turn runs through dozens of tool calls before its last words.
    steps = [
        _record(f"step-{i}", "[Bash] ls" if i % 2 else "[tool result] ok", role="assistant")
        if i % 2
        else _record(f"step-{i}", "[tool result] ok")
        for i in range(60)
    ]
    _transcript(
        "s-1.jsonl",
        _record("paste", "ENOSPC writing the docker overlay?"),
        _record("look", "Let me look.", role="assistant"),
        *steps,
        _record("fixed", "The docker disk was full: pruned the images.", role="assistant"),
    )
    _ingest(run)
    found = _search(run, "ENOSPC", "docker", "overlay")
    assert _uuids(found)[:2] == ["paste", "fixed"]
    assert found[1]["match"] == "reply"


def test_a_prompt_typed_while_a_tool_ran_is_kept_and_the_reply_still_follows_the_error(
    memory_dir: Path, run: RunCli
) -> None:
    # Claude Code hands a prompt typed during a turn to the model beside the tool's
    # output (a queue-operation `enqueue`, then `remove`; nowhere else in its transcript
    # before 2.1.x): it is archived as the user's, and the words after it still answer
    # the tool's error.
    def queue(operation: str, content: str | None = None) -> str:
        record = {"type": "queue-operation", "operation": operation, "sessionId": "s-1"}
        record.update({"timestamp": "2026-03-01T10:00:00Z"})
        return json.dumps(record | ({"content": content} if content else {}))

    _transcript(
        "s-1.jsonl",
        _record("ask", "run the illustration script"),
        _record("call", "[Bash] python insert_all.py", role="assistant"),
        queue("enqueue", "und die seitenzahlen bitte auch"),
        _record("error", "[tool error] SyntaxError: invalid syntax in insert_all.py line 15"),
        queue("remove"),
        _record("fix", "Let me simplify the script's logic.", role="assistant"),
        *[_record(f"other-{i}", f"syntax highlighting theme {i}") for i in range(5)],
    )
    _ingest(run)
    found = _search(run, "seitenzahlen")
    assert [(r["role"], r["snippet"]) for r in found] == [
        ("user", "und die **seitenzahlen** bitte auch")
    ]
    found = _search(run, "SyntaxError", "invalid", "syntax", "--limit", "3")
    assert _uuids(found)[:2] == ["error", "fix"]
    assert found[1]["match"] == "reply"
    shown = run("transcript", "show", "s-1").stdout
    assert shown.index("SyntaxError") < shown.index("seitenzahlen") < shown.index("simplify")


def test_words_apart_in_a_long_message_rank_with_some(memory_dir: Path, run: RunCli) -> None:
    filler = "Then we went through the remaining steps of the migration plan. " * 30
    _transcript(
        "s-1.jsonl",
        _record("plan", f"The spinner component. {filler} The bottom line.", role="assistant"),
        _record("near", f"{filler} The spinner sits at the bottom. {filler}", role="assistant"),
        _record("short", "the spinner sits below the table", role="assistant"),
    )
    _ingest(run)
    found = _search(run, "spinner", "bottom")
    # Every word in one message counts as "all" when the words are near each other
    # (long or short message); a page apart, they are two things the message says.
    assert _uuids(found)[0] == "near" and found[0]["match"] == "all"
    assert {r["uuid"]: r["match"] for r in found}["plan"] == "some"
    assert _uuids(_search(run, '"spinner component"', "bottom"))[0] == "plan"


def test_stopwords_add_to_the_second_tier(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("plain", "spinner, bottom border fixed", role="assistant"),
        _record("words", "so the spinner sat at the bottom, fixed", role="assistant"),
    )
    _ingest(run)
    found = _search(run, "spinner", "stuck", "at", "the", "bottom")  # "stuck": nowhere
    assert _uuids(found) == ["words", "plain"]
    assert {r["match"] for r in found} == {"some"}


def test_tool_output_ranks_below_what_was_said(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("said", "the flaky webhook test needs a retry", role="assistant"),
        _record(
            "tool",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "flaky webhook test"}],
        ),
    )
    _ingest(run)
    assert _uuids(_search(run, "flaky", "webhook", "test")) == ["said", "tool"]


def test_sessions_best_first_with_their_best_snippet(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "a.jsonl",
        _record("a1", "we decided to shard the queue by tenant", session="sa"),
        _record("a2", "sharding by tenant it is", session="sa", role="assistant"),
    )
    _transcript("b.jsonl", _record("b1", "the queue is slow", session="sb"))
    _ingest(run)
    found = _search(run, "shard", "queue", "tenant", "--sessions")
    assert [r["session_id"] for r in found] == ["sa", "sb"]
    assert found[0]["kind"] == "session" and found[0]["uuid"] == "a1"
    assert found[0]["messages"] == 2 and found[1]["match"] == "some"
    assert "session sa" in run("search", "queue", "--sessions").stdout


def test_the_uuid_leads_to_the_message(memory_dir: Path, run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        *[
            _record(f"m{i}", f"line {i} of the talk", timestamp=f"2026-03-01T10:0{i}:00Z")
            for i in range(9)
        ],
        _record("target", "the decision was zanzibarite", timestamp="2026-03-01T10:09:30Z"),
    )
    _ingest(run)
    (found,) = _search(run, "zanzibarite")
    assert found["uuid"] == "target"
    around = ["--around", found["uuid"], "--context", "1", "--json"]
    shown = json.loads(run("transcript", "show", "s-1", *around).stdout)
    assert [m["uuid"] for m in shown["messages"]] == ["m8", "target"]


def test_facts_in_both_tiers(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "deploy_on_fridays.md", "Never deploy on Fridays.", fact_type="feedback")
    write_leaf(memory_dir, "pnpm_only.md", "Use pnpm, never npm.", fact_type="user")
    run("fact", "upsert", "--leaf", "deploy_on_fridays.md", "--hook", "no Friday deploys")
    run("fact", "upsert", "--leaf", "pnpm_only.md", "--hook", "pnpm")
    _transcript("s-1.jsonl", _record("m1", "deploying the app now"))
    _ingest(run)
    found = _search(run, "deploys", "friday")
    assert _uuids(found)[0] == "deploy_on_fridays" and found[0]["match"] == "all"
    apart = _search(run, "friday", "npm")
    assert {r["slug"] for r in apart if r["kind"] == "fact"} == {"deploy_on_fridays", "pnpm_only"}
    assert {r["match"] for r in apart} == {"some"}
    # Only a fact holding every word counts a hit.
    shown = json.loads(run("fact", "show", "pnpm_only", "--json").stdout)
    assert shown["hits"] == 0


def test_touching_matches_are_one_bold_run(memory_dir: Path, run: RunCli) -> None:
    _transcript("s-1.jsonl", _record("zh", "这里有什么问题吗", session="s-1"))
    _ingest(run)
    snippet = _search(run, "有", "什么")[0]["snippet"]
    assert "**有什么**" in snippet and "****" not in snippet


def test_sessions_carry_the_summary_transcript_list_shows(memory_dir: Path, run: RunCli) -> None:
    summary = json.dumps({"type": "summary", "summary": "Moved the webshop to pnpm"})
    _transcript("s-9.jsonl", summary, _record("m1", "switch the lockfile", session="s-9"))
    _ingest(run)
    found = _search(run, "lockfile", "--sessions")
    assert found[0]["summary"] == "Moved the webshop to pnpm" and found[0]["title"] is None
    assert "Moved the webshop to pnpm" in run("search", "lockfile", "--sessions").stdout


def test_a_sessions_long_summary_is_cut_as_transcript_list_cuts_it(
    memory_dir: Path, run: RunCli
) -> None:
    # A summary is the transcript's text, any length: the session's line shows it cut,
    # as `transcript list` does, not 20,000 characters on one line.
    summary = json.dumps({"type": "summary", "summary": "Long " + "S" * 20_000})
    _transcript("s-9.jsonl", summary, _record("m1", "switch the lockfile", session="s-9"))
    _ingest(run)
    head = run("search", "lockfile", "--sessions").stdout.splitlines()[0]
    listed = run("transcript", "list").stdout.splitlines()[0]
    assert ("Long " + "S" * 75) in head and len(head) < 200 and len(listed) < 200


def test_a_query_word_starting_with_a_dash_is_told_how_to_search_it(
    memory_dir: Path, run: RunCli
) -> None:
    """`subrosa search deploy -staging` (a Google-style exclusion) is no option: click
    said "No such option '-s'", naming a letter the person never typed. The error
    names the word and how to search for it."""
    result = run("search", "--limit", "3", "deploy", "-staging", "--json", expect=2)
    assert result.stderr.splitlines()[-1] == (
        "Error: -staging: no option of search is named so; to search for a word that starts "
        "with a dash, put -- before the query: subrosa search --limit 3 --json -- deploy -staging"
    )
    misspelt = run("search", "deploy", "--limt", "3", expect=2)  # click's own hint stays
    assert "--limit" in misspelt.stderr
