"""Secrets: where a text holds one, and of what kind. Standard library only.

Three users, one set of rules:
- the archive's redactor (subrosa.archive.redact) replaces every span found here by
  `[REDACTED:<kind>]` before a transcript is stored; it finds the triggers with an
  Aho-Corasick automaton instead of `str.find`, nothing else differs;
- `fact upsert` refuses a hook or a description that holds a secret (`find_secret`),
  since MEMORY.md and `.subrosa/facts.jsonl` are meant for git;
- the witness (`check --strict`) flags secrets in the index files. It runs where
  subrosa may not be installed, so this file is copied byte for byte beside it
  (skills/memory-compact/secret_scan.py; a test keeps the copy identical). Hence no
  import from subrosa here.

Each rule has triggers: lowercase ASCII strings without which it cannot match. A
rule runs only where one of its triggers occurs, and tries one match there whose
every quantifier is bounded, so the work is linear in the text's length: at most
(occurrences of triggers) x (the longest span a rule may scan). Token shapes must
start at a word boundary, so a run of trigger-like text costs one attempt per run,
not one per character.

Keyed rules (`password = …`, `"api_key": "…"`, `--password …`) need a whole key and
a value that looks like a secret: the keyword must be the key's last component
(`DB_PASSWORD`, `clientSecret`, `SECRET_KEY`; not `passive` nor `password_hash`), and
the value must not be a name, a type, a call, a reference (`$X`, `${X}`, `{{ x }}`,
`<your-token>`) or a path. docs/security.md lists the kinds and their limits.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple


class Span(NamedTuple):
    """Characters [start, end) of a text are a secret of `kind`."""

    start: int
    end: int
    kind: str


# Where each trigger occurs in the lowercased text: trigger -> start offsets, ascending.
Hits = Mapping[str, Sequence[int]]
# A rule's finder: (text, where its triggers start, ascending) -> the secrets there.
Finder = Callable[[str, Sequence[int]], Iterator[Span]]


class Rule(NamedTuple):
    name: str  # the kind it reports (a keyed rule reports the kind its key names)
    triggers: tuple[str, ...]
    find: Finder


# The longest value a keyed rule takes, and how far any rule may look.
MAX_VALUE = 4096
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _starts_word(text: str, at: int) -> bool:
    """True when a token starting at `at` is not the tail of a longer word."""
    return at == 0 or text[at - 1] not in _WORD


# --------------------------------------------------------------------------- tokens


def _token(name: str, pattern: str, *prefixes: str, group: str | None = None) -> Rule:
    """A token with a fixed prefix: the pattern starts at one of `prefixes` (matched
    case-sensitively by the pattern, found case-insensitively as triggers) and must
    begin a word. `group` names the part that is the secret, when not all of it.
    The pattern is compiled on first use: most texts trigger no token, and compiling
    all of them cost every `fact upsert` ~10 ms of CPU."""
    cache: list[re.Pattern[str]] = []

    def find(text: str, starts: Sequence[int]) -> Iterator[Span]:
        if not cache:
            cache.append(re.compile(pattern))
        compiled = cache[0]
        index = 0
        while index < len(starts):
            at = starts[index]
            index += 1
            if not _starts_word(text, at):
                continue
            match = compiled.match(text, at)
            if match is None:
                continue
            start, end = match.span(group) if group else match.span()
            index = bisect_left(starts, match.end(), index)  # triggers inside it: done
            yield Span(start, end, name)

    return Rule(name, tuple(p.lower() for p in prefixes), find)


_B64 = "A-Za-z0-9+/"
_TOKENS = (
    _token(
        "aws-access-key",
        r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Za-z])",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
    ),
    # STS session tokens: base64 of a protobuf that starts with the same few bytes.
    _token(
        "aws-session-token",
        rf"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu|IQoFb3JpZ2lu|IQoGb3JpZ2lu|AgoJb3JpZ2lu)[{_B64}=]{{60,{MAX_VALUE}}}",
        "FwoGZXIvYXdz",
        "IQoJb3JpZ2lu",
        "IQoFb3JpZ2lu",
        "IQoGb3JpZ2lu",
        "AgoJb3JpZ2lu",
    ),
    _token(
        "github-token",
        r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9])",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
    ),
    _token("github-pat", r"github_pat_[A-Za-z0-9_]{22,255}", "github_pat_"),
    _token("gitlab-token", r"glpat-[A-Za-z0-9_-]{20,255}", "glpat-"),
    _token(
        "slack-token",
        r"xox[abposre]-[A-Za-z0-9-]{10,255}",
        *(f"xox{c}-" for c in "abposre"),
    ),
    _token(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{1,255}",
        "https://hooks.slack.com/",
    ),
    _token("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,255}", "sk-ant-"),
    _token("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,255}", "sk-"),
    _token(
        "stripe-key",
        r"(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,255}|whsec_[A-Za-z0-9+/=]{24,255})",
        "sk_live_",
        "sk_test_",
        "rk_live_",
        "rk_test_",
        "pk_live_",
        "pk_test_",
        "whsec_",
    ),
    _token("google-api-key", r"AIza[0-9A-Za-z_-]{35}", "AIza"),
    _token("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_-]{20,255}", "GOCSPX-"),
    _token(
        "jwt",
        r"eyJ[A-Za-z0-9_-]{8,1024}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,1024}",
        "eyJ",
    ),
    _token("npm-token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
    _token("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,1024}", "pypi-AgE"),
    _token("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "SG."),
    _token("huggingface-token", r"hf_[A-Za-z0-9]{34,255}", "hf_"),
    _token("digitalocean-token", r"do[por]_v1_[a-f0-9]{64}", "dop_v1_", "doo_v1_", "dor_v1_"),
    _token(
        "shopify-token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        "shpat_",
        "shpca_",
        "shppa_",
        "shpss_",
    ),
    _token("mailgun-key", r"key-[0-9a-f]{32}(?![0-9A-Za-z])", "key-"),
    _token("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "AGE-SECRET-KEY-1"),
    _token("vault-token", r"hv[sb]\.[A-Za-z0-9_-]{24,255}", "hvs.", "hvb."),
    _token("databricks-token", r"dapi[0-9a-f]{32}(?:-\d)?(?![0-9A-Za-z])", "dapi"),
    _token("django-secret-key", r"django-insecure-[^\s'\"`]{20,128}", "django-insecure-"),
    _token(
        "azure-storage-key",
        rf"AccountKey=(?P<secret>[{_B64}]{{40,200}}={{0,2}})",
        "AccountKey=",
        group="secret",
    ),
    _token(
        "azure-sas-signature",
        r"sig=(?P<secret>[A-Za-z0-9%+/=]{20,256})",
        "sig=",
        group="secret",
    ),
)


def _telegram(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """`123456789:AA…`: the trigger is in the middle, the digits before it."""
    done = 0
    for at in starts:
        if at < done or not text.startswith(":AA", at):
            continue
        digits = _DIGITS_BEFORE.search(text, max(0, at - 10), at)
        if digits is None:  # (glued to a word is fine: `…/bot123456789:AA…`)
            continue
        tail = _TELEGRAM_TAIL.match(text, at)
        if tail is not None:
            done = tail.end()
            yield Span(digits.start(), tail.end(), "telegram-bot-token")


_DIGITS_BEFORE = re.compile(r"(?<![0-9])[0-9]{8,10}$")
_TELEGRAM_TAIL = re.compile(r":AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])")


def _private_key(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """A PEM private key block, from BEGIN to END; without an END in reach, to the end
    of the text (a block cut short is still key material)."""
    done = 0
    for at in starts:
        begin = _PEM_BEGIN.search(text, max(done, at - 60), at + 40)
        if begin is None or begin.start() < done:
            continue
        end = _PEM_END.search(text, begin.end(), begin.end() + 16384)
        stop = end.end() if end else len(text)
        done = stop
        yield Span(begin.start(), stop, "private-key")


_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")


def _pem_base64(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """A PEM block base64-encoded once more (Kubernetes secrets: `tls.key: LS0tLS1CRUdJTi…`),
    when its head decodes to a private key (looked at first, so a certificate costs
    80 characters, not its whole body); wrapped lines included."""
    done = 0
    for at in starts:
        if at < done or not _starts_word(text, at):
            continue
        head = _PEM_B64_HEAD.match(text, at)
        if head is None:
            continue
        encoded = head.group(0)
        try:
            decoded = base64.b64decode(encoded[: len(encoded) // 4 * 4])
        except (binascii.Error, ValueError):
            continue
        if b"PRIVATE" not in decoded:
            continue
        match = _PEM_B64.match(text, at)
        if match is not None:
            done = match.end()
            yield Span(at, match.end(), "private-key")


# `-----BEGIN RSA PRIVATE KEY` is 44 characters of base64; the longest heads, 80.
_PEM_B64_HEAD = re.compile(rf"LS0tLS1CRUdJTi[{_B64}]{{24,66}}")
_PEM_B64 = re.compile(
    rf"LS0tLS1CRUdJTi[{_B64}=]{{20,16384}}(?:\r?\n[ \t]{{0,16}}[{_B64}=]{{16,128}}){{0,256}}"
)


# ---------------------------------------------------------------- URLs and headers


def _url_password(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """`scheme://user:password@host`: the user may be empty (`redis://:pw@host`) and the
    password may hold `/` or `@`; the last `@` before the first space, quote, `?` or
    `#` ends it. `host:8080/path@x` is a port and a path, not a password. The regex
    engine finds the candidates (a `://` with a `:` and an `@` after it); `starts`
    only says there is a `://` at all."""
    done = 0
    for candidate in _URL_CANDIDATE.finditer(text):
        at = candidate.start()
        if at < done or not _scheme_before(text, at):
            continue
        begin = candidate.end("user") + 1
        region = _URL_REST.match(text, begin)
        rest = region.group(0) if region else ""
        last_at = rest.rfind("@")
        password = rest[:last_at]
        if last_at <= 0 or _PORT_PATH.match(password) or password[0] in "$%{<":
            continue
        done = begin + last_at
        yield Span(begin, begin + last_at, "url-password")


def _scheme_before(text: str, at: int) -> bool:
    """A URL scheme (a letter, then up to 31 letters, digits, `+`, `.`, `-`) ends at `at`."""
    window = text[max(0, at - 33) : at]
    scheme = window[len(window.rstrip(_SCHEME_CHARS)) :]
    return 1 <= len(scheme) <= 32 and scheme[0].isascii() and scheme[0].isalpha()


_SCHEME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-"
# The password part stops at the next `://` (a tempered token), so a run of `://:`
# costs one short attempt each.
_URL_CANDIDATE = re.compile(
    r"://(?P<user>[^\s:/@\"'`<>\[\](){}]{0,128}):(?:(?!://)[^\s\"'`<>?#@]){1,512}@"
)
_URL_REST = re.compile(r"[^\s\"'`<>?#]{1,512}")
_PORT_PATH = re.compile(r"[0-9]{1,5}(?:/|$)")


def _basic_auth(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """`Authorization: Basic <base64 of user:password>`."""
    done = 0
    for at in starts:
        if at < done:
            continue
        match = _BASIC.match(text, at)
        if match is not None:
            done = match.end()
            yield Span(match.start("secret"), match.end("secret"), "basic-auth")


_BASIC = re.compile(
    rf"(?i:authorization)\\?[\"']?[ \t]{{0,8}}[:=][ \t]{{0,8}}\\?[\"']?(?i:basic)[ \t]{{1,8}}"
    rf"(?P<secret>[{_B64}]{{6,1024}}={{0,2}})"
)


def _bearer(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """`Bearer <token>` and `token <token>` (an Authorization header's value)."""
    done = 0
    for at in starts:
        if at < done or not _starts_word(text, at):
            continue
        match = _BEARER.match(text, at)
        if match is not None:
            done = match.end()
            yield Span(match.start("secret"), match.end("secret"), "bearer-token")


_BEARER = re.compile(
    r"(?i:bearer|token)[ \t]{1,8}(?P<secret>[A-Za-z0-9._~+/-]{20,4096}={0,2})(?![A-Za-z0-9._~+/=-])"
)


# ------------------------------------------------------------- command lines


def _command_password(
    kind: str, flags: tuple[str, ...], attached: bool, user_pass: bool = False
) -> Finder:
    """A password given on a command line after one of `flags`, within the command
    (up to a newline, `|`, `;` or `&`): `mysql -p'…'` / `-pPASS` (attached: `-p`
    alone prompts), `sshpass -p PASS`, `curl -u user:PASS`."""

    def find(text: str, starts: Sequence[int]) -> Iterator[Span]:
        done = 0
        examined = dict.fromkeys(flags, 0)  # each flag occurrence is looked at once
        command_end = -1  # where the command around the last trigger ends
        for at in starts:
            if at < done or not _starts_word(text, at):
                continue
            if command_end < at:
                stop = _COMMAND_END.search(text, at)
                command_end = stop.start() if stop else len(text)
            end = min(command_end, at + 512)
            for flag in flags:
                where = text.find(flag, max(at, examined[flag]), end)
                if where < 0:
                    examined[flag] = max(examined[flag], end)
                while where >= 0:
                    value_at = where + len(flag)
                    examined[flag] = value_at
                    if not attached:
                        value_at = _skip(text, value_at, " \t=", 4)
                    span = _flag_value(text, value_at, end, user_pass)
                    if span is not None:
                        done = span[1]
                        yield Span(span[0], span[1], kind)
                        break
                    where = text.find(flag, value_at, end)

    return find


_COMMAND_END = re.compile(r"[\n|;&]")


def _skip(text: str, at: int, chars: str, limit: int) -> int:
    end = at
    while end < len(text) and end - at < limit and text[end] in chars:
        end += 1
    return end


def _flag_value(text: str, at: int, end: int, user_pass: bool) -> tuple[int, int] | None:
    """The secret part of the value at `at` (quoted or a bare word), or None."""
    if at >= end:
        return None
    quote = text[at]
    if quote in "'\"":
        close = text.find(quote, at + 1, min(end, at + 258))
        if close < 0:
            return None
        start, stop = at + 1, close
    else:
        word = _BARE.match(text, at, end)
        if word is None:
            return None
        start, stop = word.span()
    value = text[start:stop]
    if user_pass:
        colon = value.find(":")
        if colon < 0:
            return None
        start += colon + 1
        value = value[colon + 1 :]
    if not value or value[0] in "-$%{<" or value.startswith("`"):
        return None
    return start, stop


_BARE = re.compile(r"[^\s'\"`|;&]{1,256}")


# --------------------------------------------------------------------- keyed values

# A key's last components that say its value is a secret, and the kind each reports.
_SUFFIXES: dict[tuple[str, ...], str] = {
    ("password",): "password",
    ("passwd",): "password",
    ("pwd",): "password",
    ("passphrase",): "password",
    ("pass",): "password",
    ("requirepass",): "password",
    ("masterauth",): "password",
    ("secret",): "secret",
    ("secret", "key"): "secret-key",
    ("secretkey",): "secret-key",
    ("secret", "key", "base"): "rails-secret-key-base",
    ("secret", "access", "key"): "aws-secret-key",
    ("token",): "token",
    ("api", "key"): "api-key",
    ("apikey",): "api-key",
    ("private", "key"): "private-key",
    ("privatekey",): "private-key",
}
# Configuration directives whose value follows a space (redis.conf).
_DIRECTIVES = ("requirepass", "masterauth")
# Keywords that may end a longer all-lowercase or all-uppercase word (`PGPASSWORD`,
# `clientsecret`, `githubtoken`); shorter ones (`pass`, `pwd`, `api`) must start a
# component of their own, or `bypass` and `rapid` would be keys.
_GLUED = ("password", "passwd", "passphrase", "secret", "token")
_KEY_TRIGGERS = ("pass", "pwd", "secret", "token", "api", "private", *_DIRECTIVES)
_KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_TAIL = re.compile(r"[A-Za-z0-9_.-]{1,65}")
# How a key that names a secret ends (a cheap test before splitting it).
_ENDINGS = (
    *("pass", "passwd", "password", "pwd", "passphrase", "secret", "key", "base", "token"),
    *_DIRECTIVES,
)
_COMPONENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ENV_KEY = re.compile(r"[A-Z][A-Z0-9_]*")
# After a key: its closing quote, a separator, and a value on this line or the next
# (or a YAML block `|`). A `:` separates only before a space, a quote or the line's
# end, or after the key's closing quote (`"key":"value"`): so no separator can hide
# inside an unquoted value, values never overlap the next key's, and a run of
# `key:key:key:` costs one short attempt per key.
_AFTER_KEY = re.compile(
    r"(?P<quote>\\?[\"'`])?[ \t]{0,8}"
    r"(?P<sep>=>|:=|\?=|=(?!=)|:(?:(?<=[\"'`]:)|(?=[ \t\r\n\"'`\\]|$)))[ \t]{0,8}"
    r"(?:(?P<block>[|>][-+]?[ \t]{0,8})?(?P<newline>\r?\n[ \t]{0,32}))?"
)
_SPACES = re.compile(r"[ \t]{1,8}")
# An unquoted value: up to a space, a quote, a delimiter, or a separator (`=`, or a
# `:` before a space or a quote); `=` padding at its end is kept.
_UNQUOTED = re.compile(
    r"""(?:[^\s"'`,;(){}\[\]<>&\\=:]|:(?![\s"'`]|$)|\\(?![nrt"'\\]))"""
    + f"{{1,{MAX_VALUE}}}"
    + r"""(?:={1,3}(?=[\s"'`,;(){}\[\]<>&]|$))?"""
)
_REST_OF_LINE = re.compile(r"[ \t]{0,64}(?:\r?\n|$)")
_ANNOTATION = re.compile(r"(?:\[[^\]\n]{0,64}\])?[ \t]{0,8}=(?!=)[ \t]{0,8}")
# A name: letters, `_`, `.`, `-` (an identifier, a type, None/True, a dotted path),
# perhaps nullable (`String?`).
_NAME = re.compile(r"[A-Za-z_.-]+[?!]?")
_PATH = re.compile(r"(?:/|~/|\./|\.\./)[A-Za-z0-9_./~-]*")
_MASK = re.compile(r"([*xX•.#-])\1*")
_TEMPLATE = re.compile(r"\$\{|\{\{|\{%|%\(|^<[^<>]*>$|^\$[A-Za-z_]")
_SECRET_WORDS = re.compile(r"pass|pwd|secret|token|key|auth|credential")


@lru_cache(maxsize=4096)
def _components(key: str) -> tuple[str, ...]:
    parts = [c.lower() for c in _COMPONENT.findall(key)]
    while parts and parts[-1].isdigit():
        parts.pop()  # DB_PASSWORD_2 is still a password
    return tuple(parts)


@lru_cache(maxsize=4096)
def key_kind(key: str) -> str | None:
    """The kind of secret a key names by its last components (`DB_PASSWORD` ->
    password, `apiKey` -> api-key, `PGPASSWORD` -> password), or None (`passive`,
    `password_hash`, `tokens`)."""
    parts = _components(key)
    for length in (3, 2, 1):
        suffix = parts[-length:]
        if len(suffix) == length and suffix in _SUFFIXES:
            aws = "aws" in parts or "amz" in parts
            if suffix == ("token",) and parts[-2:-1] == ("session",) and aws:
                return "aws-session-token"
            return _SUFFIXES[suffix]
    # Glued to a prefix in one case: PGPASSWORD, clientsecret, githubtoken.
    last = parts[-1] if parts else ""
    glued = next((word for word in _GLUED if last.endswith(word)), None)
    return _SUFFIXES[(glued,)] if glued else None


def _key_start(text: str, at: int) -> int:
    """Where the key holding the keyword at `at` starts (leading dashes and dots are
    a flag's or an attribute's, not the key's); -1 when it is longer than a key."""
    window = text[max(0, at - 64) : at]
    start = at - (len(window) - len(window.rstrip(_KEY_CHARS)))
    if start == at - 64 and start > 0 and text[start - 1] in _KEY_CHARS:
        return -1
    while start < at and text[start] in "-.":
        start += 1
    return start


def _keyed(text: str, starts: Sequence[int]) -> Iterator[Span]:
    """`KEY = value`, `KEY: value`, `"KEY": "value"`, `KEY=value`, `--key value`,
    `<key>value</key>`, `key:\\n  value`, where the key's last components name a
    secret (key_kind) and the value looks like one. Each run of key characters is
    looked at once, whatever number of keywords it holds; the cheap tests come first,
    since a crafted text can hold a keyword every few characters."""
    done = 0
    for at in starts:
        if at < done:
            continue
        run = _TAIL.match(text, at)
        if run is None:
            continue
        done = end = run.end()
        if (
            end - at > 64
            or text[end : end + 1] not in _AFTER_KEY_STARTS
            or not run.group(0).lower().endswith(_ENDINGS)
        ):
            continue
        key_start = _key_start(text, at) if at and text[at - 1] in _KEY_CHARS else at
        if key_start < 0:
            continue
        kind = key_kind(text[key_start:end])
        if kind is None:
            continue
        found = _keyed_value(text, key_start, end)
        if found is not None:
            # `done` stays at the key's end: a keyword inside the value found may
            # start a key of its own (`secret: client_secret: 'x'`).
            yield Span(found[0], found[1], kind)


def _keyed_value(text: str, key_start: int, key_end: int) -> tuple[int, int] | None:
    """The span of the secret value after the key [key_start, key_end), or None."""
    gap = _SPACES.match(text, key_end)
    after_gap = gap.end() if gap else key_end
    if text[after_gap : after_gap + 1] in _SEPARATOR_STARTS:
        after = _AFTER_KEY.match(text, key_end)
        if after is not None and not (after.group("block") and not after.group("newline")):
            sep = after.group("sep")
            literal = (
                sep == "="
                and after.start("sep") == key_end
                and _ENV_KEY.fullmatch(text, key_start, key_end) is not None
            )
            alone = after.group("newline") is not None
            found = _value(text, after.end(), literal=literal, alone=alone)
            if found is not None or sep != ":" or alone:
                return found
            return _annotated(text, after.end())
    before = text[key_start - 1] if key_start else ""
    if gap is None:
        if before == "<" and text.startswith(">", key_end):  # <password>value</password>
            return _value(text, key_end + 1, literal=True, alone=False, closer="<")
        return None
    if before == "-":  # --password VALUE (not --password --next-flag)
        if text.startswith("-", after_gap):
            return None
        return _value(text, after_gap, literal=True, alone=False)
    key = text[key_start:key_end]
    if _at_line_start(text, key_start):
        # A directive alone on its line: `requirepass VALUE`, `ENV DB_PASSWORD VALUE`.
        directive = _ENV_KEY.fullmatch(key) is not None or key.lower() in _DIRECTIVES
        return _value(text, after_gap, literal=directive, alone=True)
    if key.lower() in ("password", "passwd"):  # .netrc: `… login me password VALUE`
        return _value(text, after_gap, literal=False, alone=True)
    return None


# What may follow a key: a closing quote, a separator, a space, `>` (XML).
_AFTER_KEY_STARTS = frozenset("\"'`\\ \t:=?>")
_SEPARATOR_STARTS = frozenset("\"'`\\:=?")


def _at_line_start(text: str, at: int) -> bool:
    """Only indentation (and `export`, `ENV`, `set`) between the line's start and `at`."""
    line = text.rfind("\n", max(0, at - 40), at) + 1
    if line == 0 and at > 40:
        return False
    words = text[line:at].split()
    return not words or (len(words) == 1 and words[0] in ("export", "ENV", "set", "setenv"))


def _annotated(text: str, at: int) -> tuple[int, int] | None:
    """`password: str = "hunter2"`: past a type annotation to the value assigned."""
    name = _NAME.match(text, at, at + 64)
    if name is None:
        return None
    assign = _ANNOTATION.match(text, name.end())
    if assign is None:
        return None
    return _value(text, assign.end(), literal=False, alone=False)


def _value(
    text: str, at: int, *, literal: bool, alone: bool, closer: str = ""
) -> tuple[int, int] | None:
    """The value at `at` when it looks like a secret. `literal`: the syntax makes it a
    string (`KEY=value` in a shell, `--flag value`, XML); `alone`: it must be the
    only thing on its line (a value on the line after its key)."""
    if at >= len(text) or text[at] in _NOT_A_VALUE:
        return None
    quote = _quote_at(text, at)
    if quote:
        start = at + len(quote)
        end = _closing(text, start, quote)
        if end < 0:
            return None
        value = text[start:end]
        after_end = end + len(quote)
        if not _quoted_secret(value):
            return None
    else:
        match = _UNQUOTED.match(text, at)
        if match is None:
            return None
        start, end = match.span()
        if not closer:
            end = _past_delimiters(text, at, end)
        value = text[start:end]
        after_end = end
        if value.endswith(":"):
            return None  # (`key:` is a key, not a value)
        if closer and not text.startswith(closer, end):
            return None
        following = text[end] if end < len(text) else ""
        if not _unquoted_secret(value, following, literal):
            return None
    if alone and _REST_OF_LINE.match(text, after_end) is None:
        return None
    return start, end


# Within an unquoted value, `&`, `,` and `;` separate only where a new key follows
# them (`?password=x&user=me`, `Server=db;Password=x;Database=app`) or a space does;
# elsewhere they are the value's own characters (`Tr0ub4dor&3xyzzy`): stopping there
# stored the rest of the password.
_JOINED = "&,;"
_JOINED_VALUE = 256  # how far such a value runs (bounded: crafted input stays linear)
_NEXT_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\[\]-]{0,64}(?:=|:[\s\"'`])")


def _past_delimiters(text: str, at: int, end: int) -> int:
    """Where the unquoted value that starts at `at` and that _UNQUOTED ended at `end`
    really ends: past each `&`, `,` or `;` joined to more of it."""
    while (
        end + 1 < len(text)
        and text[end] in _JOINED
        and not text[end + 1].isspace()
        and text[end + 1] not in _JOINED
        and _NEXT_KEY.match(text, end + 1) is None
    ):
        more = _UNQUOTED.match(text, end + 1, min(len(text), at + _JOINED_VALUE))
        if more is None or more.end() - at >= _JOINED_VALUE:
            break  # (a value that long is no password: keep what was found)
        end = more.end()
    return end


# A value never starts with these (a reference, a template, a structure, a mask).
_NOT_A_VALUE = frozenset("$%{[(<*&@~#!|>\n")


def _quote_at(text: str, at: int) -> str:
    char = text[at]
    if char in "\"'`":
        return char
    if char == "\\" and text[at + 1 : at + 2] in ('"', "'"):
        return text[at : at + 2]
    return ""


def _closing(text: str, start: int, quote: str) -> int:
    """Where the quoted value starting at `start` closes (on the same line, within
    MAX_VALUE), or -1. A plain quote preceded by a backslash is escaped, not closing."""
    limit = min(len(text), start + MAX_VALUE)
    line_end = text.find("\n", start, limit)
    if line_end >= 0:
        limit = line_end
    at = text.find(quote, start, limit)
    while at >= 0 and len(quote) == 1 and at > start and text[at - 1] == "\\":
        at = text.find(quote, at + 1, limit)
    return at


def _quoted_secret(value: str) -> bool:
    """A quoted value is a string literal: a secret unless empty, a sentence, a
    placeholder, a mask, or a name that only repeats a key word (`"password"`)."""
    if len(value) < 4 or value[0] in "$%{<" or any(c.isspace() for c in value):
        return False
    if _TEMPLATE.search(value) or _MASK.fullmatch(value):
        return False
    return not (_NAME.fullmatch(value) and _SECRET_WORDS.search(value.lower()))


def _unquoted_secret(value: str, following: str, literal: bool) -> bool:
    """A bare value: in code it may be a name, a call, a type or a reference."""
    if following in ("(", "[", "{"):
        return False
    if len(value) < (4 if literal else 6):
        return False
    if _PATH.fullmatch(value) or _MASK.fullmatch(value) or _TEMPLATE.search(value):
        return False
    if _NAME.fullmatch(value) is None:
        return True
    # A name: in code a variable or a type; as a literal, a placeholder when it
    # repeats a key word (`your_api_key_here`).
    return literal and _SECRET_WORDS.search(value.lower()) is None


# ---------------------------------------------------------------------------- rules

RULES: tuple[Rule, ...] = (
    Rule("private-key", ("private key",), _private_key),
    Rule("private-key", ("ls0tls1crudjti",), _pem_base64),
    *_TOKENS,
    Rule("telegram-bot-token", (":aa",), _telegram),
    Rule("url-password", ("://",), _url_password),
    Rule("basic-auth", ("authorization",), _basic_auth),
    Rule("bearer-token", ("bearer", "token"), _bearer),
    Rule(
        "mysql-password", ("mysql", "mariadb"), _command_password("mysql-password", (" -p",), True)
    ),
    Rule(
        "sshpass-password",
        ("sshpass",),
        _command_password("sshpass-password", (" -p",), False),
    ),
    Rule(
        "curl-password",
        ("curl",),
        _command_password("curl-password", (" -u", " --user"), False, user_pass=True),
    ),
    Rule("password", _KEY_TRIGGERS, _keyed),
)
# Every kind a span may report, for reports and tests.
KIND_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys([*(rule.name for rule in RULES), *_SUFFIXES.values(), "aws-session-token"])
)
TRIGGERS: tuple[str, ...] = tuple(dict.fromkeys(t for rule in RULES for t in rule.triggers))
_RULES_BY_TRIGGER: dict[str, tuple[int, ...]] = {
    trigger: tuple(i for i, rule in enumerate(RULES) if trigger in rule.triggers)
    for trigger in TRIGGERS
}


def lower(text: str) -> str:
    """`text` lowercased with its length kept, so offsets in one are offsets in the
    other (`"İ".lower()` is two characters; triggers are ASCII anyway)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def find_triggers(lowered: str) -> dict[str, list[int]]:
    """Where each trigger occurs in `lowered` (the plain way; the archive uses an
    Aho-Corasick automaton that finds the same offsets in one pass)."""
    hits: dict[str, list[int]] = {}
    for trigger in TRIGGERS:
        at = lowered.find(trigger)
        while at >= 0:
            hits.setdefault(trigger, []).append(at)
            at = lowered.find(trigger, at + 1)
    return hits


def find_spans(text: str, hits: Hits | None = None) -> list[Span]:
    """Every secret in `text`, in order, overlapping finds merged (the first kind
    named). `hits` are where the triggers occur in `lower(text)`, when known."""
    if hits is None:
        hits = find_triggers(lower(text))
    if not hits:
        return []
    starts: dict[int, list[int]] = {}
    for trigger, found in hits.items():
        for index in _RULES_BY_TRIGGER[trigger]:
            starts.setdefault(index, []).extend(found)
    spans: list[Span] = []
    for index in sorted(starts):
        rule = RULES[index]
        at = starts[index]
        if len(rule.triggers) > 1:
            at.sort()
        spans.extend(rule.find(text, at))
    return _merge(spans)


def _merge(spans: list[Span]) -> list[Span]:
    spans.sort(key=lambda s: (s.start, -s.end))
    merged: list[Span] = []
    for span in spans:
        if span.end <= span.start:
            continue
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            if span.end > last.end:
                merged[-1] = Span(last.start, span.end, last.kind)
            continue
        merged.append(span)
    return merged


def replace(text: str, spans: Sequence[Span]) -> str:
    """`text` with each span replaced by `[REDACTED:<kind>]`."""
    out: list[str] = []
    last = 0
    for span in spans:
        out.append(text[last : span.start])
        out.append(f"[REDACTED:{span.kind}]")
        last = span.end
    out.append(text[last:])
    return "".join(out)


# Invisible characters a secret could be split with (`AKIA\u200b…`, bidi controls,
# variation selectors, tag characters), as ranges of code points: looked through, so the
# split secret is found. (subrosa.archive.redact finds the same characters by their bytes.)
INVISIBLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xE0000, 0xE0FFF),
)
_INVISIBLE = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in INVISIBLE) + "]")


def has_invisible(text: str) -> bool:
    """`text` holds a character look_through looks through (all of them are outside
    ASCII: most texts are ASCII, and isascii() costs nothing next to the search)."""
    return not text.isascii() and _INVISIBLE.search(text) is not None


def look_through(text: str, finder: Callable[[str], list[Span]]) -> list[Span]:
    """`finder`'s spans in `text`, and those it finds once invisible characters are
    removed, mapped back onto `text` (a span then covers the invisible characters
    inside it too)."""
    found = finder(text)
    if not has_invisible(text):
        return found
    removed = [m.start() for m in _INVISIBLE.finditer(text)]
    # The k-th removed character sat at index removed[k] - k of the stripped text.
    shifts = [at - k for k, at in enumerate(removed)]

    def raw(index: int) -> int:
        return index + bisect_right(shifts, index)

    hidden = finder(_INVISIBLE.sub("", text))
    return _merge([*found, *(Span(raw(s.start), raw(s.end - 1) + 1, s.kind) for s in hidden)])


def find_secret(text: str) -> str | None:
    """The kind of the first secret in `text`, or None when it holds none."""
    found = look_through(text, find_spans)
    return found[0].kind if found else None


def secret_value(key: str, value: str) -> str | None:
    """The kind when `value`, stored under `key` in structured data (a tool's JSON
    input), is a secret: the key names one and the value is a string literal that is
    not a placeholder, a sentence or a name repeating a key word. Else None."""
    if len(key) > 64:
        return None
    kind = key_kind(key)
    return kind if kind and _quoted_secret(value) else None
