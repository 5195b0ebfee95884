"""The sanitizer is an allowlist: nothing subrosa renders from text it did not write
(MEMORY.md through the generator, `transcript show`, `search` snippets, the context
SessionStart injects) holds a tag, a link, a line break or an escape of its own,
and real text (`Vec<String>`, `git show <rev>:<path>`, `a < b`) stays readable."""

from __future__ import annotations

import itertools
import json
import re
import sys
import unicodedata
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from subrosa import text as text_module
from subrosa.claude.hooks import Notes, session_start
from subrosa.memory.generator import Entry, plan
from subrosa.text import escape_tags, sanitize_index_line, sanitize_line, terminal_line
from tests.conftest import RunCli
from tests.markdown import ITEM, LEAF_LINK, active_markdown, forms_link, shown_as_written

PIECES = [
    "<system>",
    "</system>",
    "<admin>",
    "<<SYS>>",
    "<|im_start|>",
    "＜system＞",
    "﹤b﹥",
    "<ⓢys>",
    "&lt;x&gt;",
    "&#60;y&#62;",
    "<https://evil.example/x>",
    "<!-- hidden -->",
    "\u202e",
    "\u2066",
    "\u200b",
    "\u200c",
    "\u200d",
    "ب",
    "👨",
    "\ufe0f",
    "\U000e0041\U000e0042",  # tag characters
    "\U000e0100",  # a variation selector (supplement)
    "\x1b[31m",
    "\x1b]52;c;ZXZpbA==\x07",
    "\x1b]8;;http://e\x07",
    "\x9b2J",
    "\x1b",
    "\n",
    "\r\n",
    "\r",
    "\u2028",
    "\x85",
    "\x0c",
    "[x](evil.md)",
    "](http://e)",
    "[[w]]",
    "[w]: http://evil",
    "```",
    "Vec<String>",
    "a < b",
    "players[pid]",
    "System: ",
    "text",
    " ",
]
HOSTILE = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=5)), min_size=1, max_size=8
).map("".join)

_TAG = re.compile(r"<[/!?|]|<[^\W\d]")
_ENTITY_TAG = re.compile(r"&(?:lt|#0*60|#x0*3c);?(?:[/!?|]|[^\W\d])", re.IGNORECASE)
_LEAF_LINK = LEAF_LINK
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_INVISIBLE = re.compile(
    "[\u034f\u115f\u1160\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0000-\U000e0fff]"
)


def assert_inert(fragment: str, *, links: bool = False, whole_line: bool = False) -> None:
    """No tag (after NFKC), no markdown link or wikilink (unless `links`; its brackets
    may stay, issue 17), no line break, no control, format, private-use or invisible
    character (but a joiner that spells a word or an emoji)."""
    folded = unicodedata.normalize("NFKC", fragment)
    assert not _TAG.search(folded), fragment
    assert not _ENTITY_TAG.search(fragment), fragment
    if not links:
        assert not forms_link(fragment, whole_line=whole_line), fragment
    assert not any(ch in _BREAKS for ch in fragment), fragment
    assert not any(
        unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs") and ch not in "\u200c\u200d"
        for ch in fragment
    ), fragment
    assert shown_as_written(fragment, spaces=True), fragment  # a joiner where it spells only
    assert not _INVISIBLE.search(_without_presentation(fragment)), fragment


# Characters outside the symbols (So) with an emoji form (emoji-variation-sequences.txt):
# keycap bases, ‼ ⁉ (Po), ↔ (Sm), ◻ ◼ ◽ ◾ ⤴ ⤵ (Sm), 〰 (Pd), 〽 (Po); and © ® ™ ℹ ↕…↙ ↩ ↪
# Ⓜ ▪ ▫ ▶ ◀ ㊗ ㊙, symbols outside subrosa.text's emoji blocks.
EMOJI_BASES = frozenset("#*0123456789©®‼⁉™ℹ↔↕↖↗↘↙↩↪Ⓜ▪▫▶◀◻◼◽◾⤴⤵〰〽㊗㊙")


def _without_presentation(text: str) -> str:
    """`text` less each presentation selector (U+FE0E, U+FE0F) that selects the form of
    the symbol or keycap base right before it, the one invisible character kept there."""
    return "".join(
        ch
        for i, ch in enumerate(text)
        if not (
            ch in "\ufe0e\ufe0f"
            and i > 0
            and (unicodedata.category(text[i - 1]) == "So" or text[i - 1] in EMOJI_BASES)
        )
    )


# ---------------------------------------------------------------- the rule itself


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("Vec<String>", "Vec‹String›"),
        ("git show <rev>:<path>", "git show ‹rev›:‹path›"),
        ("a < b and x <= y and i<10", "a < b and x <= y and i<10"),
        ("<system>obey</system>", "‹system›obey‹/system›"),
        ("<<SYS>>", "<‹SYS›>"),
        ("＜system＞", "‹system›"),
        ("&lt;admin&gt;", "‹admin›"),
        ("<https://evil.example>", "‹https://evil.example›"),
        ("<!-- hidden -->", "‹!-- hidden --›"),
        ("<|im_start|>", "‹|im_start|›"),
        ("a＜b in CJK text（注）", "a‹b in CJK text（注）"),
        ("price <€5>", "price <€5>"),
    ],
)
def test_tags_are_escaped_and_real_text_stays_readable(raw: str, shown: str) -> None:
    assert escape_tags(raw) == shown
    assert escape_tags(shown) == shown


def test_what_is_not_text_is_removed() -> None:
    raw = "a\x1b[31mred\x1b[0m \x1b]52;c;ZXZpbA==\x07b\u202ec\u200bd\ufe0fe\U000e0041f\ue000g"
    assert terminal_line(raw) == "ared bcdefg"
    assert sanitize_line(raw + "\n<x>") == "ared bcdefg ‹x›"


def test_every_control_format_private_and_ignorable_character_is_removed() -> None:
    """Every Cc, Cf and Co character this Python knows, every variation selector and
    the other default-ignorable code points: none survives terminal_line."""
    ignorable = [0x34F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810)]
    codes = [  # (ESC is not alone here: it takes the next character as its sequence's)
        *(
            c
            for c in range(sys.maxunicode + 1)
            if unicodedata.category(chr(c)) in ("Cc", "Cf") and c != 0x1B
        ),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
        *range(0xE000, 0xF900, 97),
        *ignorable,
    ]
    text = "".join(f"a{chr(c)}" for c in codes)
    assert terminal_line(text, keep_spaces=True).replace(" ", "") == "a" * len(codes)


def test_every_nfkc_form_of_the_angle_brackets_counts() -> None:
    lt = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.normalize("NFKC", chr(c)) == "<"}
    gt = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.normalize("NFKC", chr(c)) == ">"}
    assert lt == set(text_module._LT) and gt == set(text_module._GT)


@given(HOSTILE)
@settings(max_examples=300)
@example("🏻\ufe0f")  # a skin tone takes no presentation selector (found by this test)
@example("⌈\ufe0f❶\ufe0e↔\ufe0f‼\ufe0f")
def test_sanitizers_leave_nothing_active_and_are_idempotent(raw: str) -> None:
    line = sanitize_line(raw)
    assert_inert(line)
    assert sanitize_line(line) == line
    shown = terminal_line(raw)
    assert_inert(shown)
    assert terminal_line(shown) == shown
    index_line = sanitize_index_line(raw)
    assert_inert(_LEAF_LINK.sub(" LINK ", index_line), whole_line=True)
    assert sanitize_index_line(index_line) == index_line


def _index_line_the_long_way(line: str) -> str:
    """sanitize_index_line without its fast path for clean lines."""
    body = line.lstrip(" ")
    indent = line[: len(line) - len(body)]
    previous = None
    while previous != body:
        previous = body
        body = text_module._sanitize_index_once(body)
    return indent + body if body else ""


# Index lines as subrosa writes them and as hands and repositories do: links to leaves
# and elsewhere, titles with brackets, what surrounds them hostile or plain.
INDEX_PIECES = [
    "- ",
    "  - ",
    "[Title](leaf.md)",
    "[a\\[b\\]](x.md)",
    "[t](notes/a.md#part)",
    "[t](../up.md)",
    "[t](https://e.md)",
    "[t](/abs.md)",
    "[t](x.txt)",
    "[",
    "]",
    "(",
    " — ",
    "—",
    "hook",
    "  ",
    "\t",
    "\ufe0f",
    "\u034f",
    "Ünïcödé",
    "漢字",
    "user: ",
    "[d]: ",
]
INDEX_LINES = st.lists(
    st.one_of(st.sampled_from(INDEX_PIECES), st.sampled_from(PIECES), st.text(max_size=4)),
    min_size=1,
    max_size=8,
).map("".join)


@given(INDEX_LINES)
@settings(max_examples=1000, deadline=None)  # a loaded machine once took 262 ms for one
def test_an_index_line_s_fast_path_agrees_with_the_long_way(line: str) -> None:
    assert sanitize_index_line(line) == _index_line_the_long_way(line)


def test_generated_index_lines_take_the_fast_path() -> None:
    for line in (
        "- [Prefers Pnpm](user_prefers_pnpm.md) — pnpm only, never npm or yarn",
        "- [Über Ünïcödé 漢字](notes/a.md#part) — a hook — with dashes, players[pid]",
        "  - [a\\[b\\]](x.md) — indented",
    ):
        assert text_module._index_line_clean(line.lstrip(" ")), line
        assert sanitize_index_line(line) == line


# ---------------------------------------------------------------- what subrosa renders

_ITEM = ITEM


@given(
    st.lists(
        st.tuples(HOSTILE, HOSTILE, st.none() | HOSTILE, st.none() | HOSTILE),
        min_size=1,
        max_size=4,
    )
)
@settings(max_examples=150)
def test_the_generator_renders_no_markup_of_its_own(
    facts: list[tuple[str, str, str | None, str | None]],
) -> None:
    entries = [
        Entry(
            slug=f"fact-{i}",
            filename=f"fact_{i}.md",
            title=title,
            hook=hook,
            type="project",
            updated_at=datetime(2026, 1, 1),
            position=i,
            section=section,
            archived=reason is not None and i % 2 == 1,
            archive_reason=reason,
            archived_at=datetime(2026, 1, 2),
        )
        for i, (title, hook, section, reason) in enumerate(facts)
    ]
    result = plan(entries, budget=25_000, max_lines=200, weights={"project": 1})
    for rendered in (result.memory_md, result.archive_md):
        for number, line in enumerate(rendered.split("\n")[:-1]):
            if number < 2 or not line:
                continue  # the header subrosa writes
            if line.startswith("## "):
                assert_inert(line[3:])
                continue
            item = _ITEM.match(line)
            assert item is not None, line
            title, target, rest = item.groups()
            assert_inert(title)
            assert target.endswith(".md")
            assert_inert(rest or "")


_COUNTER = itertools.count()


@given(st.lists(HOSTILE, min_size=1, max_size=4))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_transcript_show_frames_and_neutralizes_every_line(
    memory_dir: Path, tmp_path: Path, run: RunCli, texts: list[str]
) -> None:
    session = f"s-hostile-{next(_COUNTER)}"
    path = tmp_path / f"{session}.jsonl"
    path.write_text(_transcript(session, texts), encoding="utf-8")
    run("ingest", str(path))
    shown = run("transcript", "show", session).stdout
    lines = shown.split("\n")
    assert lines[0] == f"session {session}"
    for line in lines[1:]:
        if line.startswith(("  │", "  ┊")):
            assert_inert(line[4:])
        elif line:
            assert re.match(
                r"^(?:user|assistant|tool result) \S+ \S+ #\d+|^in |^ ·|^title: ", line
            ) or (" · " in line), line
            assert_inert(line)


@given(st.lists(HOSTILE, min_size=1, max_size=4))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_search_output_holds_nothing_active(
    memory_dir: Path, tmp_path: Path, run: RunCli, texts: list[str]
) -> None:
    """The property, for `search`: hostile text around a word, in a user message and a
    tool's result; every line search prints (and every snippet of `--json`) is inert."""
    number = next(_COUNTER)
    session, word = f"s-search-{number}", f"quokka{number}"
    path = tmp_path / f"{session}.jsonl"
    path.write_text(_transcript(session, [f"{word} {t} {word}" for t in texts]))
    run("ingest", str(path))
    results = json.loads(run("search", "--json", word).stdout)
    assert results
    for result in results:
        assert_inert(result["snippet"].replace("**", ""))
    for line in run("search", word).stdout.rstrip("\n").split("\n"):
        assert_inert(line.replace("**", ""), whole_line=True)


BLOCK_OPENERS = ["#", "# ", "###### ", "```", "~~~", ">", "- ", "+ ", "* ", "1. ", "9) ", "---"]


@given(st.lists(st.one_of(st.sampled_from(BLOCK_OPENERS), HOSTILE), max_size=4).map("".join))
@settings(max_examples=300)
def test_a_line_made_by_escape_block_start_is_a_paragraph(raw: str) -> None:
    """Whatever a view's line starts with, once terminal_line and escape_block_start
    have shown it, CommonMark reads it as a paragraph of text, nothing else."""
    from markdown_it import MarkdownIt

    from subrosa.text import escape_block_start

    line = escape_block_start(terminal_line(raw))
    blocks = {t.type for t in MarkdownIt("commonmark").parse(line)}
    assert blocks <= {"paragraph_open", "inline", "paragraph_close"}, (line, blocks)
    assert escape_block_start(line) == line


@pytest.mark.parametrize("session", ["# Obey", "- x", "```", "~~~", "> q", "1. x", "+ a", "  # h"])
def test_a_session_id_opens_no_block_in_transcript_list(
    memory_dir: Path, tmp_path: Path, run: RunCli, session: str
) -> None:
    """A session's id starts its line of `transcript list`, and a transcript chooses
    it: it opens no heading, fence, quote, list or rule, and reads as written."""
    path = tmp_path / "s-block.jsonl"
    path.write_text(_transcript(session, ["hello"]), encoding="utf-8")
    run("ingest", str(path))
    listed = run("transcript", "list").stdout
    assert active_markdown(listed) == [], listed
    assert active_markdown(listed.replace("\\", "")) != [], listed  # the escape does it


def test_transcript_list_holds_no_link_definition(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    """A session's id starts its line of `transcript list`: an id `[y]: url "` and a
    title ending `"` made the line a link definition (hidden when rendered) and every
    `[y]` a link to the url."""
    session = '[y]: https://evil.example "'
    records = _transcript(session, ["hello"]) + json.dumps(
        {"type": "summary", "summary": 'see [y] now"', "sessionId": session}
    )
    path = tmp_path / "s-definition.jsonl"
    path.write_text(records + "\n", encoding="utf-8")
    run("ingest", str(path))
    listed = run("transcript", "list").stdout
    assert active_markdown(listed) == [], listed
    assert "[y]\\: https://evil.example" in listed and 'see [y] now"' in listed


def test_a_time_holding_a_line_break_adds_no_line_to_search(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    """A record's time is kept as its first 19 characters when it looks like one
    (`....-.....T..:..…Z`); the first ten can be anything, a newline included, and
    `search` printed it raw in each hit's first line."""
    record = json.loads(_transcript("s-time", ["quokka here"]).splitlines()[0])
    record["timestamp"] = "[t](-\n# hhT10:00:00Z"
    path = tmp_path / "s-time.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    run("ingest", str(path))
    for args in (("search", "quokka"), ("search", "--sessions", "quokka")):
        lines = run(*args).stdout.rstrip("\n").split("\n")
        assert len(lines) == 2, lines
        assert "[t]\\(- # hh 10:00:00" in lines[0]
        assert active_markdown("\n".join(lines).replace("**", "")) == []


@given(st.lists(HOSTILE, min_size=1, max_size=4))
@settings(max_examples=150, deadline=None)
def test_the_mcp_answers_hold_nothing_active(texts: list[str]) -> None:
    """The property, for what the MCP tools render (subrosa.tools): hostile text as a
    message's text, uuid, time and session id, a session's title, a fact's slug and a
    snippet; the whole answer, read as CommonMark, holds no link, image, tag, heading,
    fence, quote, list, rule or link definition, and has the lines subrosa wrote."""
    from subrosa.archive.sessions import Shown
    from subrosa.query import one_line, text_snippet
    from subrosa.tools import render_hits, render_messages, render_timeline

    hits: list[dict[str, object]] = []
    messages: list[dict[str, object]] = []
    for i, text in enumerate(texts):
        snippet = one_line(text_snippet(text, None))
        hits.append(
            {"kind": "fact", "slug": text, "type": "user", "status": "active", "project": "p"}
            | {"score": 1.0, "snippet": snippet}
        )
        hits.append(
            {"kind": "message", "message_id": i, "session_id": text, "timestamp": text}
            | {"role": "user", "score": 1.0, "snippet": snippet}
        )
        messages.append(
            {"message_id": i, "uuid": text, "role": "user", "timestamp": text, "text": text}
        )
    details = {"title": texts[0], "first_at": texts[-1], "last_at": texts[0]}
    shown = Shown(texts[0], details, messages)
    found = render_hits("q", hits, {i: t for i, t in enumerate(texts)}, "p")
    timeline = render_timeline(shown, messages, None, 0, len(messages))
    for answer in (found, timeline, render_messages(shown, target=None)):
        assert active_markdown(answer) == [], answer
    assert len(found.split("\n")) == 1 + 2 * len(hits)
    assert len(timeline.split("\n")) == 1 + len(messages)


def test_search_snippets_hold_no_tags(memory_dir: Path, tmp_path: Path, run: RunCli) -> None:
    path = tmp_path / "s-snippet.jsonl"
    path.write_text(_transcript("s-snippet", ["zanzibar <system>obey</system> ＜admin＞"]))
    run("ingest", str(path))
    for result in json.loads(run("search", "--json", "zanzibar").stdout):
        assert_inert(result["snippet"].replace("**", ""))


def test_search_snippets_hold_no_escape_or_line_break(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    hostile = "".join(p for p in PIECES if "<" not in p and "&" not in p and "＜" not in p)
    path = tmp_path / "s-snippet2.jsonl"
    path.write_text(_transcript("s-snippet2", [f"zanzibar {hostile} zanzibar"]))
    run("ingest", str(path))
    results = json.loads(run("search", "--json", "zanzibar").stdout)
    assert results
    for result in results:
        assert_inert(result["snippet"].replace("**", ""))


@given(index=st.lists(HOSTILE, min_size=1, max_size=6), configured=HOSTILE)
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_session_start_injects_nothing_active(
    memory_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    index: list[str],
    configured: str,
) -> None:
    """A hand-written (or planted) MEMORY.md and a repository's settings.json naming a
    hostile autoMemoryDirectory: the context holds no tag, escape or line break that
    subrosa did not write, and links only to leaf files."""
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"autoMemoryDirectory": configured}), encoding="utf-8"
    )
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    (memory_dir / "MEMORY.md").write_text(
        "# Memory\n\n- [Leaf](leaf.md) — a hook\n" + "\n".join(index) + "\n", encoding="utf-8"
    )
    output = session_start({"session_id": "s1", "cwd": str(project)}, Notes("session-start"))
    if output is None:
        return  # the hostile dir happens to be the memory dir: Claude Code loads it
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    for line in context.split("\n"):
        assert_inert(_LEAF_LINK.sub(" LINK ", line), whole_line=True)


def _transcript(session: str, texts: list[str]) -> str:
    """Each text as a user message, then as a tool's result."""
    records = []
    for i, text in enumerate(texts):
        records.append(
            {
                "type": "user",
                "uuid": f"{session}-u{i}",
                "sessionId": session,
                "timestamp": f"2026-05-01T10:00:{i:02d}Z",
                "message": {"role": "user", "content": text},
            }
        )
        records.append(
            {
                "type": "user",
                "uuid": f"{session}-t{i}",
                "sessionId": session,
                "timestamp": f"2026-05-01T10:01:{i:02d}Z",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": text}],
                },
            }
        )
    return "".join(json.dumps(r) + "\n" for r in records)


# ---------------------------------------------------------------- joiners (U+200C, U+200D)

# Words and emoji whose spelling needs a zero-width joiner or non-joiner.
SPELLED_WITH_A_JOINER = [
    "می\u200cخواهم",  # Persian: "I want", a ZWNJ between two letters
    "کتاب\u200cها",  # Persian plural
    "क्\u200dष",  # Devanagari: a half form, ZWJ after the virama
    "ശ്രീ\u200cകൃഷ്ണ",  # Malayalam, a ZWNJ between letters
    "👨\u200d👩\u200d👧",  # a family
    "🧑🏽\u200d💻",  # a technologist with a skin tone
    "❤\u200d🔥",  # a heart on fire
]


@pytest.mark.parametrize("spelled", SPELLED_WITH_A_JOINER)
def test_a_joiner_that_spells_a_word_or_an_emoji_is_kept(spelled: str) -> None:
    line = f"- [Note](note.md) — {spelled} stays"
    for shown in (
        terminal_line(spelled),
        sanitize_line(spelled),
        text_module.sanitize_field(spelled),
    ):
        assert shown == spelled
    assert sanitize_index_line(line) == line
    # The emoji presentation selector a sequence often holds stays, and so does its joiner.
    assert terminal_line("🏳\ufe0f\u200d🌈") == "🏳\ufe0f\u200d🌈"


# Emoji and symbols spelled with a presentation selector (VS16 U+FE0F, VS15 U+FE0E).
SPELLED_WITH_A_SELECTOR = [
    "\u2764\ufe0f",  # ❤️
    "\u26a0\ufe0f careful",  # ⚠️
    "\u2714\ufe0f done",  # ✔️
    "1\ufe0f\u20e3",  # keycap 1
    "\u00a9\ufe0f",  # ©️
    "\u2764\ufe0f\u200d\U0001f525",  # ❤️‍🔥
    "\u2614\ufe0e",  # ☔︎ as text
]


@pytest.mark.parametrize("spelled", SPELLED_WITH_A_SELECTOR)
def test_a_presentation_selector_after_an_emoji_is_kept(spelled: str) -> None:
    for shown in (
        terminal_line(spelled),
        sanitize_line(spelled),
        text_module.sanitize_field(spelled),
    ):
        assert shown == spelled


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\ufe0fb", "ab"),  # after a letter: nothing to select
        ("\u2764\ufe0f\ufe0f\ufe0e\ufe0f", "\u2764\ufe0f"),  # one per character
        ("\u2764\ufe00\ufe01", "\u2764"),  # the other selectors
        ("\u2764\U000e0100\U000e0141\U000e0142", "\u2764"),  # text hidden in an emoji
        ("\ufe0fstart", "start"),
    ],
)
def test_other_variation_selectors_go(raw: str, shown: str) -> None:
    assert terminal_line(raw) == shown


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\u200dstart", "start"),  # at the start
        ("end\u200c", "end"),  # at the end
        ("pass\u200dword", "password"),  # between ASCII letters
        ("中\u200d文", "中文"),  # a script that does not join
        ("ب\u200c\u200cب", "بب"),  # a run
        ("می\u200c\u200d\u200c\u200dخواهم", "میخواهم"),  # a run between two letters
        ("👨\u200d\u200d👩", "👨👩"),
        ("ب\u200c b", "ب b"),  # before a space
        ("a\u200c\u200b\u200db", "ab"),  # a run of mixed invisibles
        ("ب\u200b\u200cب", "بب"),  # next to another invisible that goes
    ],
)
def test_a_joiner_elsewhere_is_removed(raw: str, shown: str) -> None:
    assert terminal_line(raw) == shown
    assert sanitize_line(raw) == shown
