"""Hostile and broken transcripts and queries: skipped and reported, never a traceback,
never a hang, nothing stored twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import RunCli


def _ingest(run: RunCli, *args: str, expect: int | None = 0) -> dict[str, Any]:
    result = run("ingest", "--json", *args, expect=expect)
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _record(uuid: str, content: Any, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {
        "type": role,
        "uuid": uuid,
        "sessionId": "hostile",
        "timestamp": "2026-03-01T10:00:00Z",
        "message": {"role": role, "content": content},
        **extra,
    }


def test_a_binary_file_named_jsonl_is_skipped_and_reported(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / "binary.jsonl").write_bytes(os.urandom(64 * 1024) + b"\n\x00\xff\n")
    good = json.dumps(_record("u-1", "a findable needle"))
    (folder / "good.jsonl").write_text(good + "\n", encoding="utf-8")
    report = _ingest(run, str(folder))
    assert report["new_messages"] == 1 and sum(report["skipped"].values()) > 0
    found = json.loads(run("search", "--json", "needle").stdout)
    assert len(found) == 1
    again = _ingest(run, str(folder))
    assert again["new_messages"] == 0


HOSTILE_TEXT = st.sampled_from(
    [
        "\x00",
        "\ud800",
        "\u202e",
        "<system>obey</system>",
        "```",
        "\n" * 3,
        "x" * 5000,
        '"',
        "\\",
        "NEAR(a b)",
        "*",
    ]
)
TEXT = st.lists(st.one_of(st.text(max_size=10), HOSTILE_TEXT), max_size=4).map("".join)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", 7])},
    optional={"text": TEXT | JSON_VALUE, "content": TEXT | JSON_VALUE, "input": JSON_VALUE},
)


@st.composite
def transcript_lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["record", "record", "json", "truncated", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=60)).replace(b"\n", b"")
    if kind == "json":
        return json.dumps(draw(JSON_VALUE)).encode()
    content = draw(TEXT | st.lists(BLOCK, max_size=3) | JSON_VALUE)
    record = _record(
        draw(st.sampled_from(["u-1", "u-2", "u-3"]) | TEXT),
        content,
        role=draw(st.sampled_from(["user", "assistant", "system", "summary", ""])),
    )
    for key in draw(st.lists(st.sampled_from(["sessionId", "timestamp", "message", "uuid"]))):
        record[key] = draw(JSON_VALUE)
    line = json.dumps(record).encode("utf-8", "surrogatepass")
    if kind == "truncated":
        line = line[: draw(st.integers(0, len(line)))]
    return line


@given(lines=st.lists(transcript_lines(), min_size=1, max_size=8))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_fuzzed_transcript_lines_are_stored_once_or_skipped(
    memory_dir: Path, tmp_path: Path, run: RunCli, lines: list[bytes]
) -> None:
    folder = tmp_path / "fuzz"
    folder.mkdir(exist_ok=True)
    path = folder / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    first = _ingest(run, str(path))
    again = _ingest(run, str(path))
    assert again["new_messages"] == 0
    listed = run("transcript", "list", "--all-projects", "--json")
    for session in json.loads(listed.stdout):
        shown = run("transcript", "show", session["session_id"], "--json")
        assert "Traceback" not in shown.stderr
    assert first["new_messages"] >= 0
    run("search", "--json", "obey")


QUERIES = st.lists(
    st.one_of(
        st.text(max_size=15),
        st.sampled_from(
            [
                '"',
                "'",
                "*",
                "^",
                "-",
                "+",
                ":",
                "(",
                ")",
                "NEAR(",
                "AND",
                "OR",
                "NOT",
                "\x00",
                "\ud800",
                "\u202e",
                "col:x",
                "{a b}",
                "x" * 3000,
                "%",
                "_",
                "\\",
                "🙂",
                "東京",
            ]
        ),
    ),
    min_size=1,
    max_size=5,
).map(" ".join)


@given(query=QUERIES)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_hostile_search_queries(memory_dir: Path, run: RunCli, query: str) -> None:
    result = run("search", "--json", "--", query, expect=None)
    assert result.exit_code in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    if result.exit_code == 0:
        assert isinstance(json.loads(result.stdout), list)
    else:
        assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_transcripts_that_are_not_files_never_hang(
    memory_dir: Path, tmp_path: Path, run: RunCli, kind: str
) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    target = folder / "odd.jsonl"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        target.symlink_to("/dev/zero")
    else:
        target.mkdir()
    for given_path in (folder, target):
        report = _ingest(run, str(given_path), expect=None)
        assert report["new_messages"] == 0


def test_a_single_100_mb_json_line_is_skipped_and_reported(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    path = folder / "huge.jsonl"
    before = json.dumps(_record("u-before", "the line before the huge one"))
    after = json.dumps(_record("u-after", "the line after the huge one"))
    head = json.dumps(_record("u-huge", "PLACEHOLDER")).split("PLACEHOLDER")
    with path.open("wb") as handle:  # written in pieces: never 100 MB in this process
        handle.write(before.encode() + b"\n" + head[0].encode())
        block = b"x" * (1 << 20)
        for _ in range(100):
            handle.write(block)
        handle.write(head[1].encode() + b"\n" + after.encode() + b"\n")
    report = _ingest(run, str(path))
    assert report["new_messages"] == 2
    assert report["skipped"] == {"line too long": 1}
    assert report["bytes_read"] == path.stat().st_size
    texts = [
        m["text"]
        for m in json.loads(run("transcript", "show", "hostile", "--json").stdout)["messages"]
    ]
    assert texts == ["the line before the huge one", "the line after the huge one"]
    assert _ingest(run, str(path))["new_messages"] == 0


def test_hostile_queries_through_the_fast_path(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    """`subrosa search` as a process answers without click when the archive exists."""
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(_record("u-1", "a needle here")) + "\n")
    _ingest(run, str(folder))
    for query in (b"needle", b'"', b"NEAR(a", b"x\xff", b"\xed\xa0\x80", b"*", b"a" * 20000):
        proc = subprocess.run(
            [os.fsencode(sys.executable), b"-m", b"subrosa", b"search", b"--json", b"--", query],
            capture_output=True,
            timeout=60,
        )
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode in (0, 2) and "Traceback" not in err, (query, err)
        assert len(err.strip().splitlines()) <= 1, (query, err)
        if proc.returncode == 0:
            assert isinstance(json.loads(proc.stdout), list)


def test_a_local_command_filed_as_a_system_record_is_kept(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # Claude Code 2.1.x files some commands the person types (/memory, /mcp, /fork,
    # /model …) and their output as `system` records of subtype local_command, where
    # others (/context, a skill's command) are `user` records. The command is theirs
    # either way (kept as said), its output a tool's (as docs/commands.md says).
    folder = tmp_path / "commands"
    folder.mkdir()
    typed = (
        "<command-name>/fork</command-name>\n            <command-message>fork"
        "</command-message>\n            <command-args>try the WALRUS idea</command-args>"
    )
    printed = "<local-command-stdout>Forked conversation. NARWHAL</local-command-stdout>"

    def system(uuid: str, content: str) -> dict[str, Any]:
        return {
            "type": "system",
            "subtype": "local_command",
            "level": "info",
            "uuid": uuid,
            "sessionId": "hostile",
            "timestamp": "2026-03-01T10:00:01Z",
            "content": content,
            "isMeta": False,
        }

    lines = [_record("u-1", "first prompt"), system("s-1", typed), system("s-2", printed)]
    path = folder / "commands.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert _ingest(run, str(path))["new_messages"] == 3
    shown = json.loads(run("transcript", "show", "hostile", "--json").stdout)["messages"]
    assert [(m["kind"], m["text"]) for m in shown] == [
        ("user", "first prompt"),
        ("user", typed),
        ("tool result", f"[tool result] {printed}"),
    ]
    assert [r["uuid"] for r in json.loads(run("search", "--json", "walrus").stdout)] == ["s-1"]
    assert _ingest(run, str(path))["new_messages"] == 0


def test_a_transcript_that_starts_with_a_bom_keeps_its_first_line(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # A transcript saved by an editor that writes a UTF-8 byte order mark (Windows'
    # Notepad, PowerShell's Set-Content) keeps its first message.
    folder = tmp_path / "bom"
    folder.mkdir()
    lines = [_record("u-1", "the first PELICAN line"), _record("u-2", "the second line")]
    path = folder / "bom.jsonl"
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    report = _ingest(run, str(path))
    assert (report["new_messages"], report["skipped"]) == (2, {})
    assert [r["uuid"] for r in json.loads(run("search", "--json", "pelican").stdout)] == ["u-1"]


def test_a_transcript_rewritten_in_place_past_its_first_4_kb_is_read_again(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # Copied over in place (`cp`, `rsync --inplace` keep the inode) with its first
    # bytes unchanged and a line after them rewritten: the offset the last ingest ended
    # at is now inside a line. Reading on from there lost that line and the next.
    folder = tmp_path / "rewritten"
    folder.mkdir()
    path = folder / "rewritten.jsonl"

    def write(*records: dict[str, Any]) -> None:
        with path.open("r+b" if path.exists() else "wb") as handle:  # same inode
            handle.truncate(0)
            handle.write("".join(json.dumps(r) + "\n" for r in records).encode())

    head = _record("u-0", "padding " + "p" * 5000)
    write(head, _record("u-1", "short one"), _record("u-2", "short two"))
    inode = path.stat().st_ino
    assert _ingest(run, str(path))["new_messages"] == 3
    longer = "a much longer line that moves every offset after it CHEETAH"
    write(head, _record("u-1b", longer), _record("u-2b", "JAGUAR"), _record("u-3b", "LEOPARD"))
    assert path.stat().st_ino == inode
    report = _ingest(run, str(path))
    assert (report["new_messages"], report["files_restarted"], report["skipped"]) == (3, 1, {})
    for word in ("cheetah", "jaguar", "leopard"):
        assert len(json.loads(run("search", "--json", word).stdout)) == 1


def test_a_line_a_crash_cut_short_loses_only_itself(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # A crash cut the last line short; the resumed session appended its next records
    # after it, so the first of them shares that line. That record is read (the torn
    # one is lost and counted); so is a record with nested objects, and a line that is
    # only garbage is "not json" as before.
    folder = tmp_path / "torn"
    folder.mkdir()
    path = folder / "torn.jsonl"
    whole = json.dumps(_record("u-1", "before the crash"))
    torn = json.dumps(_record("u-2", "cut short by the OSPREY crash"))[:50]
    path.write_text(whole + "\n" + torn)
    assert _ingest(run, str(path))["new_messages"] == 1
    nested = _record("u-3", [{"type": "text", "text": "after the restart, a HERON"}])
    with path.open("a") as handle:
        handle.write(json.dumps(nested) + "\n" + json.dumps(_record("u-4", "the next")) + "\n")
        handle.write('{"type": "user", garbage {"not": "a record"}\n')
    report = _ingest(run, str(path))
    assert report["new_messages"] == 2
    assert report["skipped"] == {"torn line": 1, "not json": 1}
    assert [r["uuid"] for r in json.loads(run("search", "--json", "heron").stdout)] == ["u-3"]
    assert json.loads(run("search", "--json", "osprey").stdout) == []
