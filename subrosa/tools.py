"""Recall as tools: the use cases behind `subrosa mcp`, each answering an agent in
compact text.

Progressive disclosure (claude-mem's pattern): `search` gives one short hit per fact
or message (an id, where and when, a one-line snippet); `get` gives one of them whole,
with its neighbours on request; `timeline` a stretch of a session, one line a
message; `facts` the index the session started with. `remember` writes a fact.

Each function takes a Place (the memory dir, the database, the settings, resolved as
the CLI and the hooks resolve them) and plain values, calls the use cases the CLI
calls (subrosa.recall for search: the same ranking and the same hit counts;
subrosa.archive.sessions, subrosa.memory.remember, the index files), and returns the
text the agent reads. Everything shown that a transcript or a leaf holds is untrusted
and is framed or made one line, as `transcript show` and `search` print it. Errors are
SubrosaError with one sentence; the read tools write nothing but the hit counts.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subrosa.config import Settings
from subrosa.errors import InvalidInput, NotFound
from subrosa.query import one_line

if TYPE_CHECKING:
    from subrosa.archive.kept import KeptArchive

KINDS = ("all", "facts", "messages")
SCOPES = ("project", "all")
TIERS = ("hot", "cold", "all")
# What one answer may hold: a message or leaf shown whole is cut past this (the agent
# can page through a session with timeline); neighbours and timeline lines are cut
# shorter, they are context.
WHOLE_CHARS = 20_000
NEIGHBOUR_CHARS = 600
LINE_CHARS = 160


@dataclass(frozen=True)
class Place:
    """Where the memory is: resolved once by the entry point, as the CLI resolves it.

    A long-lived caller (the MCP server) keeps the archive's connection open between
    calls in `archive` (subrosa.archive.kept): on SQLite the page cache stays warm (a
    query for a common word 3-4x faster at 1 GB than on a new connection), on a
    PostgreSQL server each call stops paying a new backend (its connect and its cold
    catalog caches). bench/mcp_server.py measures both."""

    memory_dir: Path
    db_url: str
    settings: Settings
    archive: KeptArchive = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        from subrosa.archive.kept import KeptArchive

        kept = KeptArchive(self.db_url, self.settings.tool_result_chars)
        object.__setattr__(self, "archive", kept)

    def close(self) -> None:
        """Close the archive's connection, and the engines a call opened (`remember`
        writes through SQLAlchemy; a migration too), when any was."""
        import sys

        self.archive.close()
        db = sys.modules.get("subrosa.db")  # not imported for that alone (~380 ms)
        if db is not None:
            db.dispose_all()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + f" […{len(text) - limit:,} more]"


def _cut_framed(text: str, limit: int) -> str:
    """`text` cut so that, framed (each line behind its gutter), it holds about `limit`
    characters: a text of short lines framed to three times `limit` and more."""
    from subrosa.archive.conversation import _LINE_BREAKS, GUTTER

    spent = position = 0
    for brk in _LINE_BREAKS.finditer(text):
        cost = brk.end() - position + len(GUTTER)
        if spent + cost > limit:
            break
        spent, position = spent + cost, brk.end()
    else:
        if spent + len(text) - position <= limit:
            return text
    end = position + max(0, limit - spent)
    return text[:end].rstrip() + f" […{len(text) - end:,} more]"


def _time(value: Any) -> str:
    # One line: a record's time is kept as it came when it merely looks like one
    # (subrosa.archive.transcripts.normalize_time), its first ten characters anything.
    return one_line(str(value)[:16]) if value else "-"


# ---------------------------------------------------------------- search


def search(
    place: Place,
    query: str,
    *,
    limit: int = 10,
    kind: str = "all",
    since: str | None = None,
    sessions: str = "project",
) -> str:
    """`subrosa search` for an agent: facts first, then messages, one compact hit each."""
    from subrosa import recall
    from subrosa.archive.sessions import message_uuids
    from subrosa.query import QueryError, not_a_date

    try:
        filters = recall.filters_for(
            since=since, role=None, all_projects=sessions == "all", memory_dir=place.memory_dir
        )
    except QueryError:
        raise InvalidInput(not_a_date("since", str(since))) from None
    facts_only, messages_only = kind == "facts", kind == "messages"

    def found(conn: sqlite3.Connection) -> tuple[list[dict[str, Any]], list[str], dict[int, str]]:
        hits = recall.search(conn, query, filters, limit, facts_only, messages_only)
        said = recall.readings()  # the misspelt words this search read as others
        numbers = [hit["message_id"] for hit in hits if hit["kind"] == "message"]
        return hits, said, message_uuids(place.db_url, numbers, conn)

    hits, said, uuids = place.archive.run(found)
    shown = render_hits(query, hits, uuids, filters.home[0] if filters.home else "")
    return "\n".join([*said, shown])


def render_hits(
    query: str, hits: list[dict[str, Any]], uuids: dict[int, str], this_project: str
) -> str:
    """Two lines a hit: what and where (id, session, time, score), then the snippet."""
    if not hits:
        return f"No facts or messages match {one_line(query)!r}."
    lines = [
        f"{len(hits)} hit{'s' if len(hits) > 1 else ''} for {one_line(query)!r}, best first "
        "(get(id) shows one whole; timeline(session, around=id) its neighbours):"
    ]
    from subrosa.archive.search import archived_by, several_people

    who = several_people(hits)
    for hit in hits:
        score = f"score {hit['score']:.3g}"
        if hit["kind"] == "fact":
            head = f"fact {one_line(hit['slug'])} · {hit['type']}"
            if hit["status"] != "active":
                head += f" · {hit['status']}"
            if hit["project"] != this_project:
                head += f" · other project: {one_line(hit['project'])}"
        else:
            ident = uuids.get(hit["message_id"], f"#{hit['message_id']}")
            head = (
                f"message {one_line(ident)} · session {one_line(hit['session_id'])[:8]} · "
                f"{_time(hit['timestamp'])} · {hit['role']}"
            )
            if who and archived_by(hit):
                head += f" · by {one_line(archived_by(hit))}"
        lines.append(f"{head} · {score}")
        # Four spaces, as `subrosa search` indents it: a line so indented after a line
        # of text continues it, so a snippet that starts `# `, ```` ``` ````, `> `, `- `
        # or `---` opens no heading, fence, quote, list or rule (two spaces let it).
        lines.append(f"    {hit['snippet']}")
    return "\n".join(lines)


# ---------------------------------------------------------------- get


def get(place: Place, ident: str, *, around: int = 0) -> str:
    """A fact's leaf whole, or an archived message with `around` neighbours each side.
    `ident` is a fact's slug, a message's uuid, or a message's number (`#N`)."""
    ident = ident.strip()
    if not ident.startswith("#"):
        leaf = _leaf_text(place.memory_dir, ident)
        if leaf is not None:
            return leaf
    from subrosa.archive.sessions import message_shown

    try:
        shown = place.archive.run(
            lambda conn: message_shown(conn, ident, context=around), lock=False
        )
    except NotFound:
        raise NotFound(
            f"{one_line(ident)[:120]}: no fact of this project and no archived message has "
            "this id; search() gives ids."
        ) from None
    return render_messages(shown, target=ident.removeprefix("#"))


def _leaf_text(memory_dir: Path, ident: str) -> str | None:
    from subrosa.archive.conversation import framed_lines
    from subrosa.memory.leaf import filename_problem, read_leaf_text
    from subrosa.memory.marker import INDEX_FILES

    name = ident.removesuffix(".md") + ".md"
    if "/" in name or "\\" in name or name in INDEX_FILES or filename_problem(name):
        return None
    text = read_leaf_text(memory_dir, name)
    if text is None:
        return None
    head = f"fact {one_line(ident.removesuffix('.md'))} · {one_line(str(memory_dir / name))}"
    return "\n".join([head, *framed_lines(_cut_framed(text.rstrip(), WHOLE_CHARS))])


def render_messages(shown: Any, *, target: str | None) -> str:
    """A session's messages framed as `transcript show` frames them (no text can pass
    for another turn); the `target` message (uuid or number) marked and shown whole,
    the others cut to NEIGHBOUR_CHARS."""
    from subrosa.archive.conversation import (
        GUTTER,
        TOOL_GUTTER,
        framed_lines,
        header,
        message_kind,
    )
    from subrosa.text import terminal_line

    details = shown.details
    title = terminal_line(str(details.get("title") or details.get("summary") or ""))
    out = [f"session {terminal_line(shown.session_id)}" + (f" · {title}" if title else "")]
    for message in shown.messages:
        hit = target in (str(message["message_id"]), message["uuid"])
        text = str(message["text"])
        text = _cut_framed(text, WHOLE_CHARS if hit else NEIGHBOUR_CHARS)
        line = header({**message, "text": text})
        if hit:
            line = f"▶ {line} {terminal_line(str(message['uuid']))}"
        tool = message_kind(str(message["role"]), text) == "tool result"
        out.append("")
        out.append(line)
        out.extend(framed_lines(text, TOOL_GUTTER if tool else GUTTER))
    return "\n".join(out)


# ---------------------------------------------------------------- timeline


def timeline(place: Place, session: str, *, around: str | None = None, limit: int = 20) -> str:
    """A stretch of one session, one line a message: `limit` messages centred on
    `around` (a message's uuid or number), else the session's first ones."""
    from subrosa.archive.sessions import session_shown

    shown = place.archive.run(lambda conn: session_shown(conn, session.strip()), lock=False)
    messages = shown.messages
    start = 0
    target = around.strip().removeprefix("#") if around else None
    if target:
        at = next(
            (i for i, m in enumerate(messages) if target in (str(m["message_id"]), m["uuid"])),
            None,
        )
        if at is None:
            raise NotFound(
                f"{one_line(target)[:120]}: no message of session "
                f"{one_line(shown.session_id)} has this id."
            )
        start = max(0, min(at - (limit - 1) // 2, len(messages) - limit))
    return render_timeline(shown, messages[start : start + limit], target, start, len(messages))


def render_timeline(
    shown: Any, messages: list[dict[str, Any]], target: str | None, start: int, total: int
) -> str:
    """A header (the session, its span, which messages are shown), then one line a
    message: its number, time, who, and the start of its text on one line."""
    from subrosa.archive.conversation import message_kind

    details = shown.details
    title = one_line(str(details.get("title") or details.get("summary") or ""))
    head = f"session {one_line(shown.session_id)}"
    if title:
        head += f" · {title[:80]}"
    head += (
        f" · {_time(details.get('first_at'))} – {_time(details.get('last_at'))}"
        f" · messages {start + 1}–{start + len(messages)} of {total}"
        " (get('#N') shows one whole)"
    )
    lines = [head]
    for message in messages:
        kind = message_kind(str(message["role"]), str(message["text"]))
        mark = "▶" if target in (str(message["message_id"]), message["uuid"]) else " "
        text = one_line(str(message["text"]))
        lines.append(
            f"{mark}#{message['message_id']} {_time(message['timestamp'])} "
            f"{'tool' if kind == 'tool result' else kind}: {_cut(text, LINE_CHARS)}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- facts


def facts(place: Place, *, tier: str = "hot") -> str:
    """The index files as SessionStart would inject them: MEMORY.md (hot), or
    MEMORY_archive.md (cold), or both; each line sanitized the same way."""
    from subrosa.fsutil import read_text_if_exists
    from subrosa.memory.marker import ARCHIVE, INDEX
    from subrosa.text import sanitize_index_line

    names = {"hot": (INDEX,), "cold": (ARCHIVE,), "all": (INDEX, ARCHIVE)}[tier]
    parts = []
    for name in names:
        path = place.memory_dir / name
        text = read_text_if_exists(path)
        if text is None:
            parts.append(
                f"{name}: none yet in {one_line(str(place.memory_dir))} "
                "(remember() writes the first fact and the index)."
            )
            continue
        lines = [sanitize_index_line(line) for line in text.splitlines()]
        size = len(text.encode("utf-8"))
        parts.append(
            "\n".join(
                [f"{name} ({one_line(str(path))}): {len(lines)} lines, {size:,} bytes", *lines]
            )
        )
    return "\n\n".join(parts)


# ---------------------------------------------------------------- remember


def remember(
    place: Place,
    *,
    slug: str,
    fact_type: str,
    description: str,
    body: str,
    pin: bool = False,
) -> str:
    """Write the fact as a leaf, register it as `fact upsert` does, generate the index;
    say what changed and what the index weighs now."""
    from subrosa.memory.project import Project
    from subrosa.memory.remember import remember as remember_fact

    done = remember_fact(
        place.db_url,
        Project(place.memory_dir),
        slug=slug,
        fact_type=fact_type,
        description=description,
        body=body,
        pin=pin,
        settings=place.settings,
    )
    path = one_line(str(done.path))
    lines = [f"{done.action} fact {done.slug} ({path})" + (", pinned" if done.pinned else "")]
    if done.index_written:
        where = "listed in MEMORY.md" if done.in_index else "in MEMORY_archive.md (below budget)"
        lines.append(
            f"{where}; MEMORY.md is now {done.index_bytes:,} / {done.budget:,} bytes, "
            f"{done.index_lines} / {done.max_lines} lines"
        )
    lines.extend(f"warning: {one_line(message)}" for message in done.warnings)
    return "\n".join(lines)
