"""Secret redaction: what a transcript held that must never reach the archive.

Every kind is a regular expression and the literal strings without which it cannot
match. The literals are looked for first, all at once (one Aho-Corasick pass over
the lowercased text), so the expressions only run on the few texts that could hold a
secret: ingest reads gigabytes, and two dozen regular expressions over every message
would dominate it.
A match becomes `[REDACTED:<kind>]`; for `key=value` shapes only the value goes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import ahocorasick_rs


@dataclass(frozen=True)
class Kind:
    name: str
    pattern: re.Pattern[str]
    # Any of these (case-sensitive) must be in the text for the pattern to run;
    # `lower_triggers` are looked for in the lowercased text.
    triggers: tuple[str, ...] = ()
    lower_triggers: tuple[str, ...] = ()
    # Token shapes must not start inside a word ("task-…" is no OpenAI key).
    boundary: bool = True
    # Matched only where one of `lower_triggers` starts (see Redactor._apply_anchored).
    anchored: bool = False


def _kind(
    name: str,
    pattern: str,
    *triggers: str,
    lower: tuple[str, ...] = (),
    boundary: bool = True,
    anchored: bool = False,
) -> Kind:
    return Kind(name, re.compile(pattern), tuple(triggers), lower, boundary, anchored)


_ASSIGNED = r"""["']?[ \t]*(?:[:=]|=>)[ \t]*["']?"""
KINDS: tuple[Kind, ...] = (
    _kind(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
        "PRIVATE KEY",
        boundary=False,
    ),
    _kind(
        "aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", "AKIA", "ASIA", "ABIA", "ACCA"
    ),
    _kind(
        "aws-secret-key",
        r"(?i)(?P<keep>aws_?secret_?access_?key" + _ASSIGNED + r")[A-Za-z0-9/+=]{40}",
        lower=("aws",),
        boundary=False,
    ),
    _kind(
        "github-token", r"gh[pousr]_[A-Za-z0-9]{36,255}\b", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"
    ),
    _kind("github-pat", r"github_pat_[A-Za-z0-9_]{22,255}", "github_pat_"),
    _kind("gitlab-token", r"glpat-[A-Za-z0-9_-]{20,}", "glpat-"),
    _kind("slack-token", r"xox[abposre]-[A-Za-z0-9-]{10,}", "xox"),
    _kind(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+",
        "hooks.slack.com",
    ),
    _kind("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}", "sk-"),
    _kind("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", "sk-"),
    _kind("stripe-key", r"(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}", "_live_", "_test_"),
    _kind("google-api-key", r"AIza[0-9A-Za-z_-]{35}", "AIza"),
    _kind("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_-]{20,}", "GOCSPX-"),
    _kind("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "eyJ"),
    _kind("npm-token", r"npm_[A-Za-z0-9]{36}\b", "npm_"),
    _kind("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}", "pypi-AgE"),
    _kind("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "SG."),
    _kind("huggingface-token", r"hf_[A-Za-z0-9]{34,}", "hf_"),
    _kind("digitalocean-token", r"do[por]_v1_[a-f0-9]{64}", "_v1_"),
    _kind("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shp"),
    _kind("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b", ":AA"),
    _kind("mailgun-key", r"key-[0-9a-f]{32}\b", "key-"),
    _kind(
        "azure-storage-key",
        r"(?P<keep>AccountKey=)[A-Za-z0-9+/=]{40,}",
        "AccountKey=",
        boundary=False,
    ),
    _kind(
        "url-password",
        r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'<>\[\]]+:)[^\s@/\"'<>]+(?=@)",
        "://",
        boundary=False,
    ),
    _kind(
        "bearer-token",
        r"(?i)(?P<keep>(?:bearer|token)[ \t]+)[A-Za-z0-9._~+/-]{20,}=*",
        lower=("bearer", "token "),
        boundary=False,
        anchored=True,
    ),
    _kind(
        "password",
        r"(?i)(?P<keep>(?:pass(?:word|wd)?|pwd|secret|api[_-]?key|access[_-]?token"
        r"|auth[_-]?token|private[_-]?key)[\w.-]*" + _ASSIGNED + r")(?![\[<{$(])[^\s\"',;`]{6,}",
        lower=("pass", "pwd", "secret", "api", "access", "auth", "private"),
        boundary=False,
        anchored=True,
    ),
)
KIND_NAMES = tuple(kind.name for kind in KINDS)


def _replacer(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _trigger_table(lower: bool) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each distinct trigger once, with the indices of the kinds it opens."""
    table: dict[str, list[int]] = {}
    for index, kind in enumerate(KINDS):
        for trigger in kind.lower_triggers if lower else kind.triggers:
            table.setdefault(trigger, []).append(index)
    return tuple((trigger, tuple(indices)) for trigger, indices in table.items())


_CASE = _trigger_table(lower=False)
_LOWER = _trigger_table(lower=True)


def _automaton() -> tuple[
    ahocorasick_rs.AhoCorasick, tuple[tuple[tuple[str, bool, tuple[int, ...]], ...], ...]
]:
    """Every trigger, lowercased, in one Aho-Corasick automaton: one pass over the
    lowercased text finds them all (forty `in` scans cost about ten times more). A
    trigger in the text is also in the lowercased text (lowercasing maps each character
    on its own), so this finds a superset; case-sensitive triggers are then confirmed
    with `in`. Returns the automaton and, per pattern, each trigger that lowercases to
    it: (the trigger, whether case matters, the kinds it opens)."""
    entries: dict[str, list[tuple[str, bool, tuple[int, ...]]]] = {}
    for trigger, indices in _CASE:
        entries.setdefault(trigger.lower(), []).append((trigger, True, indices))
    for trigger, indices in _LOWER:
        assert trigger == trigger.lower(), trigger
        entries.setdefault(trigger, []).append((trigger, False, indices))
    # A DFA: forty short patterns make a small one, and it scans a quarter faster
    # than the default NFA.
    automaton = ahocorasick_rs.AhoCorasick(
        list(entries), implementation=ahocorasick_rs.Implementation.DFA
    )
    return automaton, tuple(tuple(value) for value in entries.values())


_AUTOMATON, _PATTERNS = _automaton()
# Per pattern, the anchored kinds it opens (their keyword offsets are kept).
_ANCHORED_BY_PATTERN = tuple(
    tuple(sorted({i for _, _, indices in triggers for i in indices if KINDS[i].anchored}))
    for triggers in _PATTERNS
)


class Scan(NamedTuple):
    """What one pass over a text found: the kinds that could match (KINDS order), the
    lowercased text, and where each anchored kind's keywords start in it."""

    kinds: list[int]
    lowered: str
    starts: dict[int, list[int]]


def scan(text: str) -> Scan:
    """The kinds whose triggers are in `text`, with the anchored kinds' keyword offsets."""
    lowered = text.lower()
    # Overlapping: every occurrence of every pattern, so no anchored keyword is missed.
    matches = _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
    if not matches:
        return _NOTHING
    found: set[int] = set()
    starts: dict[int, list[int]] = {}
    seen: set[int] = set()
    for pattern, start, _ in matches:
        for index in _ANCHORED_BY_PATTERN[pattern]:
            starts.setdefault(index, []).append(start)
        if pattern in seen:
            continue
        seen.add(pattern)
        for trigger, case, indices in _PATTERNS[pattern]:
            if not case or trigger in text:
                found.update(indices)
    return Scan(sorted(found), lowered, starts)


_NOTHING = Scan([], "", {})


def candidates(text: str) -> list[int]:
    """The indices of the kinds whose triggers are in `text`, in KINDS order."""
    return list(scan(text).kinds)


@dataclass
class Redactor:
    """Redacts text and counts what it replaced, by kind."""

    counts: Counter[str] = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        found = scan(text)
        if not found.kinds:
            return text
        original = text
        for index in found.kinds:
            kind = KINDS[index]
            if kind.anchored and text is original:
                # Nothing replaced yet: the scan's offsets still hold.
                text = self._apply_anchored(
                    kind, text, found.lowered, sorted(found.starts.get(index, ()))
                )
            else:
                text = self._apply(kind, text)
        return text

    def _apply(self, kind: Kind, text: str) -> str:
        if kind.anchored:
            lowered = text.lower()
            starts = sorted(
                at for keyword in kind.lower_triggers for at in _find_all(lowered, keyword)
            )
            return self._apply_anchored(kind, text, lowered, starts)
        marker = _replacer(kind.name)
        keeps = "keep" in kind.pattern.groupindex

        def substitute(match: re.Match[str]) -> str:
            # Patterns start with their literal (so the regex engine can search for it
            # fast); the word boundary before it is checked here instead of with \b.
            start = match.start()
            if kind.boundary and start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                return match.group(0)
            self.counts[kind.name] += 1
            return (match.group("keep") + marker) if keeps else marker

        return kind.pattern.sub(substitute, text)

    def _apply_anchored(self, kind: Kind, text: str, lowered: str, starts: list[int]) -> str:
        """Case-insensitive keyword shapes (`password = …`): the pattern is tried only
        where one of the kind's keywords starts (`starts`, offsets in `lowered`, sorted);
        a scan of the whole text by an alternation of keywords costs ten times more."""
        marker = _replacer(kind.name)
        keeps = "keep" in kind.pattern.groupindex
        if len(lowered) != len(text):  # lowercasing changed offsets (rare scripts)
            return kind.pattern.sub(
                lambda m: self._count(kind, (m.group("keep") if keeps else "") + marker), text
            )
        out, last = [], 0
        for at in starts:
            if at < last:
                continue
            match = kind.pattern.match(text, at)
            if match is None:
                continue
            out.append(text[last:at])
            out.append(self._count(kind, (match.group("keep") if keeps else "") + marker))
            last = match.end()
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _count(self, kind: Kind, replacement: str) -> str:
        self.counts[kind.name] += 1
        return replacement

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _find_all(text: str, keyword: str) -> Iterator[int]:
    at = text.find(keyword)
    while at >= 0:
        yield at
        at = text.find(keyword, at + 1)


def redact(text: str) -> str:
    """`text` with every secret replaced (when the counts are not needed)."""
    return Redactor()(text)
