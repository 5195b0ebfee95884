"""Staleness rules (document 002): which facts look finished, and how sure we are.

Pure functions: values in (a fact's hook, its leaf text, pinned, hits, when its leaf
last changed, today), a Verdict out, naming the signals that made the call. The CLI
(subrosa.cli.stale) reads the facts, opens a leaf only when a high-confidence
archive is on the table, and archives.

- Signals in the hook: a terminal word (Complete, Done, Closed, Resolved, Archived,
  Cancelled, Superseded, and the spellings Completed, Canceled, Finished), as a whole
  word in any case and not negated or conditional ("not done", "once closed"); an
  absolute date earlier than today (the latest date in the hook counts, so a hook
  that also names a future date is not stale).
- The signal in the leaf: it confirms a terminal state (a `Status: Closed` line, a
  heading like `## Outcome` whose section reports completion, or a closing paragraph
  saying the work is finished or superseded).
- High confidence (archive): the leaf confirms AND (the hook has a terminal word OR
  its date is more than 30 days before today). Pinned facts are flagged instead.
- Low confidence (flag): any signal short of that, or a fact with no search hits
  whose leaf has not changed for 90 days.

Standard library only, like everything that only transforms text.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

from subrosa.lazyre import compile_lazily
from subrosa.memory.witness import load as load_witness
from subrosa.text import sanitize_line, truncate_bytes

OLD_DATE_DAYS = 30
DORMANT_DAYS = 90

# Document 002's terminal markers, plus two spellings and "finished".
TERMINAL_WORDS = (
    "complete",
    "completed",
    "done",
    "closed",
    "resolved",
    "archived",
    "cancelled",
    "canceled",
    "superseded",
    "finished",
)
# A `Status:` line is explicit, so a few more finished states count there.
STATUS_WORDS = (
    *TERMINAL_WORDS,
    "abandoned",
    "obsolete",
    "retired",
    "shipped",
    "merged",
    "fixed",
    "concluded",
    "withdrawn",
    "wontfix",
)
# What an `## Outcome` section may report.
OUTCOME_HEADINGS = ("outcome", "outcomes", "result", "results", "resolution", "conclusion")

# A whole word: no letter, digit, underscore, hyphen or apostrophe on either side
# ("Undone", "closed-source" and "completeness" are not terminal words).
_BEFORE = r"(?<![\w\-'’])"
_AFTER = r"(?![\w\-'’])"


def _words(words: tuple[str, ...]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_TERMINAL = compile_lazily(rf"{_BEFORE}(?:{_words(TERMINAL_WORDS)}){_AFTER}", re.IGNORECASE)
_COMPLETION = compile_lazily(rf"{_BEFORE}(?:{_words(STATUS_WORDS)}){_AFTER}", re.IGNORECASE)

# A word in the same clause, just before a terminal word, that makes it not (yet) true:
# "not done", "never closed", "once complete", "to be resolved", "almost finished".
_GUARDS = frozenset(
    {
        *("not", "never", "nor", "no", "yet", "until", "till", "unless", "if", "when"),
        *("whenever", "once", "be", "almost", "nearly", "half", "partly", "partially"),
        *("mostly", "soon"),
    }
)
_CLAUSE_BREAK = compile_lazily(r"[;:,.!?()\[\]{}|—–]|\s-\s")
_WORD = compile_lazily(r"[\w'’]+")

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = _words(tuple(_MONTHS))
_ISO_DATE = compile_lazily(r"(?<![\d/\-.])(\d{4})([-/])(\d{2})\2(\d{2})(?![\d/])")
_MONTH_FIRST = compile_lazily(
    rf"{_BEFORE}({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.IGNORECASE
)
_DAY_FIRST = compile_lazily(
    rf"(?<![\d\w])(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})(?!\d)", re.IGNORECASE
)

_FRONTMATTER = compile_lazily(
    r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*$\r?\n?", re.DOTALL | re.MULTILINE
)
_STATUS_VALUE = compile_lazily(rf"(?:{_words(STATUS_WORDS)}){_AFTER}", re.IGNORECASE)
_BLANK_LINE = compile_lazily(r"\n[ \t]*\n")
_RULE = compile_lazily(r"[-*_\s]{3,}")
_POINTER_START = compile_lazily(
    r"^[\W_]*(?:see(?:\s+also)?|related|links?|refs?|references?|sources?)\b", re.IGNORECASE
)
_LINKS = compile_lazily(r"\[\[[^\]\n]*\]\]|\[[^\]\n]*\]\([^)\n]*\)|https?://\S+")
_YEAR = compile_lazily(r"\d{4}")
_MONTH_HINT = compile_lazily(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)", re.IGNORECASE)
_HEADING = compile_lazily(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_OUTCOME_HEADING = compile_lazily(rf"^(?:{_words(OUTCOME_HEADINGS)})\b", re.IGNORECASE)
_FINISHED_PHRASES = (
    # "the spike is done", "this work was completed on 2026-09-01", "is now superseded"
    re.compile(
        r"(?:\b(?:is|was|are|were|been|got)|['’]s)\s+(?:now\s+|fully\s+|officially\s+|finally\s+)?"
        r"(?:finished|complete|completed|done|closed|resolved|superseded|cancell?ed|"
        r"abandoned|obsolete|retired)\b"
        r"(?!\s+(?:by|via|with|using|automatically|manually|when|once|if|before|every)\b)",
        re.IGNORECASE,
    ),
    re.compile(r"\bsuperseded\s+by\b", re.IGNORECASE),
    re.compile(
        r"\bno\s+longer\s+(?:relevant|needed|applies|apply|in\s+use|used|active|valid|true|"
        r"maintained|current)\b",
        re.IGNORECASE,
    ),
    # a paragraph that opens with the verdict: "Done.", "Completed 2026-09-01: …"
    re.compile(
        r"^\W*(?:done|finished|completed|closed|resolved|superseded|cancell?ed|abandoned)"
        r"(?:\s*[.:!;—–]|\s+(?:on\s+)?\d{4}-\d{2}-\d{2})",
        re.IGNORECASE,
    ),
)

Level = Literal["archive", "flag"]
SignalKind = Literal["status", "outcome", "closing", "terminal", "date", "dormant", "missing"]


@dataclass(frozen=True)
class Signal:
    """One piece of evidence: where it was found, what kind, and the text that shows it."""

    where: Literal["leaf", "hook", "usage"]
    kind: SignalKind
    evidence: str


@dataclass(frozen=True)
class HookSignals:
    """What the hook says: a terminal word (as written) and its latest date, if past."""

    terminal: str | None
    past_date: date | None
    days_ago: int | None

    @property
    def old_date(self) -> bool:
        """The date is more than 30 days before today (document 002's threshold)."""
        return self.days_ago is not None and self.days_ago > OLD_DATE_DAYS

    @property
    def qualifies(self) -> bool:
        """The hook's half of a high-confidence call: worth opening the leaf for."""
        return self.terminal is not None or self.old_date


@dataclass(frozen=True)
class Verdict:
    """The call on one fact, the signals behind it, and a one-line reason naming them."""

    level: Level
    high_confidence: bool
    signals: tuple[Signal, ...]
    reason: str
    strength: int

    @property
    def sort_key(self) -> tuple[int, int]:
        """Strongest first: full high-confidence matches (pinned ones), then more evidence."""
        return (-int(self.high_confidence), -self.strength)


# --- the hook ------------------------------------------------------------------


def _guarded(text: str, start: int) -> bool:
    """True when a word in the same clause just before `start` negates or defers it."""
    clause = _CLAUSE_BREAK.split(text[max(0, start - 120) : start])[-1]
    before = [w.lower() for w in _WORD.findall(clause)][-3:]
    return any(w in _GUARDS or w.endswith(("n't", "n’t")) for w in before)


def terminal_word(text: str) -> str | None:
    """The first terminal word in `text` (whole word, any case, not negated), as written."""
    for match in _TERMINAL.finditer(text):
        if not _guarded(text, match.start()):
            return match.group(0)
    return None


def _valid_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def dates_in(text: str) -> list[date]:
    """Every absolute calendar date in `text`: 2026-04-27, 2026/04/27, April 27, 2026,
    27 Apr 2026. Impossible dates (2026-02-30) are ignored."""
    found: list[date | None] = []
    if _YEAR.search(text) is None:  # every form has a four-digit year: skip the scans
        return []
    for m in _ISO_DATE.finditer(text):
        found.append(_valid_date(int(m.group(1)), int(m.group(3)), int(m.group(4))))
    if _MONTH_HINT.search(text) is None:
        return [d for d in found if d is not None]
    for m in _MONTH_FIRST.finditer(text):
        found.append(_valid_date(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2))))
    for m in _DAY_FIRST.finditer(text):
        found.append(_valid_date(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1))))
    return [d for d in found if d is not None]


def hook_signals(hook: str, today: date) -> HookSignals:
    """The hook's signals. Its latest date counts: "Done 2026-01-05, recheck 2027-01-05"
    still points forward, so it carries no date signal."""
    dates = dates_in(hook)
    latest = max(dates) if dates else None
    past = latest if latest is not None and latest < today else None
    return HookSignals(
        terminal=terminal_word(hook),
        past_date=past,
        days_ago=(today - past).days if past is not None else None,
    )


# --- the leaf ------------------------------------------------------------------


def _clip(text: str, limit: int = 80) -> str:
    line = sanitize_line(text)
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return truncate_bytes(line, 4 * limit)


def _split_frontmatter(text: str) -> tuple[str, str]:
    match = _FRONTMATTER.match(text)
    if match is None:
        return "", text
    return match.group(1), text[match.end() :]


def _status_line(text: str) -> str | None:
    """A `Status: Closed` line (also `**Status:** Done`, `- Status: resolved`, `## Status:
    Cancelled`, a frontmatter `status: archived`). Parsed by hand: a regex with this many
    optional runs of spaces and markup backtracks badly on long lines."""
    for line in text.splitlines():
        rest = line.lstrip(" \t>-+*#_")
        if rest[:6].lower() != "status":
            continue
        after = rest[6:].lstrip(" \t*_")
        if not after.startswith(":"):
            continue
        value = after[1:].lstrip(" \t*_\"'")
        if _STATUS_VALUE.match(value):
            return _clip(rest[:6] + ": " + value.rstrip(" *_\"'"))
    return None


def _outcome(body: str) -> str | None:
    headings = list(_HEADING.finditer(body))
    for index, heading in enumerate(headings):
        title = heading.group(2).strip(" *_")
        if not _OUTCOME_HEADING.match(title):
            continue
        level = len(heading.group(1))
        end = len(body)
        for later in headings[index + 1 :]:
            if len(later.group(1)) <= level:
                end = later.start()
                break
        section = title[title.find(":") + 1 :] if ":" in title else ""
        section += "\n" + body[heading.end() : end]
        # The first few mentions decide; a section of thousands of "not done" is not worth more.
        for match in itertools.islice(_COMPLETION.finditer(section), 20):
            if not _guarded(section, match.start()):
                return _clip(f"## {title.split(':')[0]}: {_sentence(section, match.start())}")
    return None


def _sentence(text: str, at: int) -> str:
    """The sentence of `text` around position `at`."""
    stop = text.rfind(". ", 0, at)
    start = max(stop + 2 if stop != -1 else 0, text.rfind("\n", 0, at) + 1)
    ends = [i for i in (text.find(". ", at), text.find("\n", at)) if i != -1]
    return text[start : min(ends) + 1 if ends else len(text)].strip()


def _paragraphs(body: str) -> list[str]:
    blocks = [b.strip() for b in _BLANK_LINE.split(body)]
    return [b for b in blocks if b and not _HEADING.fullmatch(b) and not _RULE.fullmatch(b)]


def _is_pointer(paragraph: str) -> bool:
    """A trailing "See [[x]]" / "Related: …" / list of links: not the closing statement."""
    if _POINTER_START.match(paragraph):
        return True
    return not _WORD.search(_LINKS.sub(" ", paragraph))


def _closing(body: str) -> str | None:
    paragraphs = _paragraphs(body)
    while paragraphs and _is_pointer(paragraphs[-1]):
        paragraphs.pop()
    if not paragraphs:
        return None
    last = paragraphs[-1]
    for pattern in _FINISHED_PHRASES:
        match = pattern.search(last)
        if match is not None and not _guarded(last, match.start()):
            return _clip(f"closing paragraph: {_sentence(last, match.start())}")
    return None


def leaf_signal(text: str) -> Signal | None:
    """The leaf's confirmation of a terminal state, if it gives one.

    `text` is a leaf's body, or the whole file: a frontmatter `status: closed` counts
    like a `Status: Closed` line in the body. Checked in order: a Status line, an
    Outcome-like section reporting completion, a closing paragraph saying so.
    """
    front, body = _split_frontmatter(text)
    # A fenced block is an example (a ticket template, a report's shape), not the leaf
    # saying where its own work stands; the witness's fence rules, as the take-over's.
    body = load_witness().without_fences(body)
    status = _status_line(front) or _status_line(body)
    if status is not None:
        return Signal("leaf", "status", status)
    outcome = _outcome(body)
    if outcome is not None:
        return Signal("leaf", "outcome", outcome)
    closing = _closing(body)
    if closing is not None:
        return Signal("leaf", "closing", closing)
    return None


# --- the verdict ---------------------------------------------------------------

_STRENGTH = {"status": 4, "outcome": 4, "closing": 3, "terminal": 3, "dormant": 1, "missing": 0}


def assess(
    *,
    hook: str,
    leaf_text: str | None,
    pinned: bool,
    hits: int,
    last_changed: date,
    today: date,
    from_hook: HookSignals | None = None,
) -> Verdict | None:
    """The staleness call on one fact, or None when nothing suggests it is stale.

    `leaf_text` is None when the leaf could not be read: it then cannot confirm
    anything, and the fact is flagged rather than archived. `from_hook` is
    `hook_signals(hook, today)` when the caller has it already.
    """
    if from_hook is None:
        from_hook = hook_signals(hook, today)
    signals: list[Signal] = []
    leaf = leaf_signal(leaf_text) if leaf_text is not None else None
    if leaf is not None:
        signals.append(leaf)
    elif leaf_text is None:
        signals.append(Signal("leaf", "missing", "the leaf file is missing or unreadable"))
    if from_hook.terminal is not None:
        signals.append(Signal("hook", "terminal", from_hook.terminal))
    if from_hook.past_date is not None:
        signals.append(Signal("hook", "date", from_hook.past_date.isoformat()))
    unchanged_days = (today - last_changed).days
    dormant = hits <= 0 and unchanged_days >= DORMANT_DAYS
    if dormant:
        signals.append(Signal("usage", "dormant", f"{unchanged_days} days"))
    if not any(s.kind != "missing" for s in signals):
        return None

    high = leaf is not None and from_hook.qualifies
    strength = sum(_STRENGTH.get(s.kind, 0) for s in signals)
    if from_hook.past_date is not None:
        strength += 3 if from_hook.old_date else 2
    reason = _reason(leaf, leaf_text is None, from_hook, today, pinned, high)
    if dormant:
        usage = f"no search hits and unchanged for {unchanged_days} days (since {last_changed})"
        only_usage = leaf is None and from_hook.terminal is None and from_hook.past_date is None
        reason = (
            f"{usage}; leaf and hook show no terminal state" if only_usage else f"{reason}; {usage}"
        )
    return Verdict(
        level="archive" if high and not pinned else "flag",
        high_confidence=high,
        signals=tuple(signals),
        reason=reason,
        strength=strength,
    )


def _reason(
    leaf: Signal | None,
    missing: bool,
    from_hook: HookSignals,
    today: date,
    pinned: bool,
    high: bool,
) -> str:
    """One line naming the signal in the leaf and the signal in the hook."""
    if leaf is not None:
        leaf_part = f'leaf: "{leaf.evidence}"'
    elif missing:
        leaf_part = "leaf: file missing or unreadable, so not archived"
    else:
        leaf_part = "leaf: no terminal state"
    hook_parts = []
    if from_hook.terminal is not None:
        hook_parts.append(f'"{from_hook.terminal}"')
    if from_hook.past_date is not None:
        hook_parts.append(
            f"dated {from_hook.past_date} ({from_hook.days_ago} days before {today}"
            + ("" if from_hook.old_date else f", within {OLD_DATE_DAYS}")
            + ")"
        )
    hook_part = "hook: " + (
        ", ".join(hook_parts) if hook_parts else "no terminal word or past date"
    )
    reason = f"{leaf_part}; {hook_part}"
    if pinned and high:
        reason = f"pinned, so flagged instead of archived: {reason}"
    return reason
