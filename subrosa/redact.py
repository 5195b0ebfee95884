"""Secret redaction: what a transcript held that must never reach the archive.

Every kind is a regular expression and the literal strings without which it cannot
match. The literals are checked first with `in` (a fast substring search), so the
expressions only run on the few texts that could hold a secret: ingest reads
gigabytes, and two dozen regular expressions over every message would dominate it.
A match becomes `[REDACTED:<kind>]`; for `key=value` shapes only the value goes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field


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
    """Each distinct trigger once, with the indices of the kinds it opens: every
    trigger costs a scan of every text, the biggest part of redaction's time."""
    table: dict[str, list[int]] = {}
    for index, kind in enumerate(KINDS):
        for trigger in kind.lower_triggers if lower else kind.triggers:
            table.setdefault(trigger, []).append(index)
    return tuple((trigger, tuple(indices)) for trigger, indices in table.items())


_CASE = _trigger_table(lower=False)
_LOWER = _trigger_table(lower=True)


def candidates(text: str) -> list[int]:
    """The indices of the kinds whose triggers are in `text`, in KINDS order."""
    found: set[int] = set()
    for trigger, indices in _CASE:
        if trigger in text:
            found.update(indices)
    lowered = text.lower()
    for trigger, indices in _LOWER:
        if trigger in lowered:
            found.update(indices)
    return sorted(found)


@dataclass
class Redactor:
    """Redacts text and counts what it replaced, by kind."""

    counts: Counter[str] = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        for index in candidates(text):
            text = self._apply(KINDS[index], text)
        return text

    def _apply(self, kind: Kind, text: str) -> str:
        marker = _replacer(kind.name)
        keeps = "keep" in kind.pattern.groupindex
        if kind.anchored:
            return self._apply_anchored(kind, text, marker, keeps)

        def substitute(match: re.Match[str]) -> str:
            # Patterns start with their literal (so the regex engine can search for it
            # fast); the word boundary before it is checked here instead of with \b.
            start = match.start()
            if kind.boundary and start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                return match.group(0)
            self.counts[kind.name] += 1
            return (match.group("keep") + marker) if keeps else marker

        return kind.pattern.sub(substitute, text)

    def _apply_anchored(self, kind: Kind, text: str, marker: str, keeps: bool) -> str:
        """Case-insensitive keyword shapes (`password = …`): find each keyword with a
        plain substring search and try the pattern only there; a scan of the whole text
        by an alternation of keywords costs ten times more."""
        lowered = text.lower()
        if len(lowered) != len(text):  # lowercasing changed offsets (rare scripts)
            return kind.pattern.sub(
                lambda m: self._count(kind, (m.group("keep") if keeps else "") + marker), text
            )
        matches: list[re.Match[str]] = []
        for keyword in kind.lower_triggers:
            at = lowered.find(keyword)
            while at >= 0:
                match = kind.pattern.match(text, at)
                if match is not None:
                    matches.append(match)
                at = lowered.find(keyword, at + 1)
        if not matches:
            return text
        matches.sort(key=lambda m: m.start())
        out, last = [], 0
        for match in matches:
            if match.start() < last:
                continue
            out.append(text[last : match.start()])
            out.append(self._count(kind, (match.group("keep") if keeps else "") + marker))
            last = match.end()
        out.append(text[last:])
        return "".join(out)

    def _count(self, kind: Kind, replacement: str) -> str:
        self.counts[kind.name] += 1
        return replacement

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(text: str) -> str:
    """`text` with every secret replaced (when the counts are not needed)."""
    return Redactor()(text)
