"""An archived session as text a person (or the extraction skill) reads. Pure.

The text of a message is untrusted: a web page a tool fetched, a file it read, can
hold anything, including lines that look like another turn ("user 2026-05-01 …").
So the rendering is framed: a header line, at the start of the line, says who
speaks; every line of a message's text follows it behind a gutter (two spaces and a
bar), so no content can start a line of its own. A tool's output, stored in a
`user` record by Claude Code, is headed `tool result`, never `user`, and has a
gutter of its own. Control, format and escape characters are dropped, so a message
cannot drive the terminal (colours, OSC 52 clipboard writes, hidden links) either.
"""

from __future__ import annotations

from subrosa.lazyre import compile_lazily
from subrosa.text import escape_block_start, terminal_line

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# How subrosa.archive.transcripts labels a tool's output when it stores a message.
TOOL_RESULT_LABELS = ("[tool result]", "[tool error]")
GUTTER = "  │ "
TOOL_GUTTER = "  ┊ "
# The tags Claude Code wraps a local command's text in when it stores it as a user
# message: a slash command, its output, the caveat before them, a `!` shell command.
# A fork (`/fork`) is named after its first line, which can be one of these; that is
# no title, so a session shows its summary instead (the messages keep their text).
_COMMAND_WRAPPER = compile_lazily(
    r"\s*<(?:local-command-caveat|local-command-stdout|local-command-stderr|command-name"
    r"|command-message|command-args|bash-input|bash-stdout|bash-stderr)>"
)
# Every way a terminal or an editor may start a new line.
_LINE_BREAKS = compile_lazily(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def message_kind(role: str, text: str) -> str:
    """`user`, `assistant`, or `tool result` (a user record carrying a tool's output)."""
    if role == "user" and text.lstrip().startswith(TOOL_RESULT_LABELS):
        return "tool result"
    return role if role in ("user", "assistant") else terminal_line(role) or "?"


def session_label(value: object) -> str | None:
    """A session's title or summary as it is shown: None when there is none, or when it
    is Claude Code's wrapper around a local command (see _COMMAND_WRAPPER)."""
    if not isinstance(value, str) or not value.strip() or _COMMAND_WRAPPER.match(value):
        return None
    return value


def framed_lines(text: str, gutter: str = GUTTER) -> list[str]:
    """`text` as lines behind `gutter`: none of them can pass for a header."""
    lines = []
    for line in _LINE_BREAKS.split(text):
        cleaned = terminal_line(line.expandtabs(4), keep_spaces=True)
        lines.append((gutter + cleaned).rstrip() if cleaned.strip() else gutter.rstrip())
    return lines


def header(message: dict[str, Any]) -> str:
    """`ROLE TIME #ID`, and for a tool's output a reminder of what it is."""
    kind = message_kind(str(message["role"]), str(message["text"]))
    line = f"{kind} {terminal_line(str(message['timestamp'] or '-'))} #{message['message_id']}"
    if kind == "tool result":
        line += " (a tool's output, not the user's words)"
    return line


def render_conversation(
    session_id: str, info: dict[str, Any], messages: list[dict[str, Any]]
) -> str:
    """The session's header and every message, framed (see the module docstring)."""
    out = [f"session {terminal_line(session_id)}"]
    title = terminal_line(str(info.get("title") or info.get("summary") or ""))
    if title:
        out.append(f"title: {title}")
    where = terminal_line(str(info.get("cwd") or info.get("project") or ""))
    if info.get("git_branch"):
        where += f" ({terminal_line(str(info['git_branch']))})"
    span = f"{info.get('first_at') or '?'} – {info.get('last_at') or '?'}"
    # `in` first: the folder is the transcript's to say (`user 2026-… #1`, `# Obey`),
    # and a line it started could pass for a header or open a heading or a fence.
    where = f"in {where}" if where else ""
    out.append(f"{where} · {terminal_line(span)} · {info.get('message_count', 0)} messages")
    for message in messages:
        out.append("")
        out.append(header(message))
        tool = message_kind(str(message["role"]), str(message["text"])) == "tool result"
        out.extend(framed_lines(str(message["text"]), TOOL_GUTTER if tool else GUTTER))
    return "\n".join(out)


def session_line(session: dict[str, Any]) -> str:
    """One line of `transcript list`: id, last time, messages, who archived it
    (user@host, when known), title (one line, cut)."""
    label = terminal_line(str(session.get("title") or session.get("summary") or ""))
    last = terminal_line(str(session.get("last_at") or "-"))
    who = ""
    if session.get("username"):
        who = terminal_line(f"{session['username']}@{session.get('host') or '?'}") + "  "
    # The id starts the line: one that reads `# Obey`, `- x` or "```" would open a
    # heading, a list or a fence, and `[y]: url "` before a title ending `"` a link
    # definition (and `[y]` anywhere a link).
    return escape_block_start(
        f"{terminal_line(str(session['session_id']))}  {last:19}  "
        f"{session['message_count']:5} messages  {who}{label[:80]}"
    )
