"""Planted secrets and crafted inputs, shared by tests/test_redaction_recall.py and
bench/redaction.py (the tests assert, the bench measures).

PLANTS: secrets of many kinds, each placed as a real transcript would carry it: in a
user's text, an assistant's text, a tool call's input (JSON, so quotes arrive escaped
as `\\"`, several keys, values on the line after their key) and a tool's result.
Every secret body is random (seeded), so finding its bytes or its words anywhere in
the database means it leaked, never that some other text matched.

CRAFTED: texts of about 1 MB built to make a backtracking redactor quadratic: runs of
keywords without a value, keys followed by long runs of key characters, unbounded URL
schemes, unterminated quotes, token prefixes repeated without a token.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_RNG = random.Random(18)
_ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _pw() -> str:
    """A password-like value: letters, digits and a symbol, random."""
    return _rand(6) + _RNG.choice("!%^*+") + _rand(6, string.digits + string.ascii_lowercase)


def _b64(n: int) -> str:
    return _rand(n, _ALNUM + "+/")


@dataclass(frozen=True)
class Plant:
    """One secret as a transcript carries it."""

    kind: str  # what the secret is (the label in the bench's table)
    where: str  # user | assistant | tool-input | tool-result
    secret: str  # what must not reach the database
    content: Any  # the text, or the tool's input (a dict)
    tool: str = "Bash"


def _plants() -> list[Plant]:
    akia = "AKIA" + _rand(16, string.ascii_uppercase + string.digits)
    asia = "ASIA" + _rand(16, string.ascii_uppercase + string.digits)
    aws_secret = _b64(40)
    session = "FwoGZXIvYXdzE" + _b64(300)
    ghp = "ghp_" + _rand(36)
    npm = "npm_" + _rand(36)
    pem_body = _b64(64) + "\n" + _b64(64)
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"
    k8s_key = base64.b64encode(
        f"-----BEGIN PRIVATE KEY-----\n{_b64(64)}\n-----END PRIVATE KEY-----\n".encode()
    ).decode()
    basic = base64.b64encode(f"admin:{_pw()}".encode()).decode()
    pw = [_pw() for _ in range(24)]
    keys = [_rand(24) for _ in range(8)]
    sig = _rand(30) + "%2B" + _rand(10) + "%3D"
    account_key = _b64(86) + "=="
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJ" + _rand(40) + "." + _rand(43)
    return [
        # --- the user's own words
        Plant("aws-access-key", "user", akia, f"my access key is {akia}, keep it safe"),
        Plant("github-token", "user", ghp, f"use {ghp} for the push"),
        Plant("openai-key", "user", (k := "sk-proj-" + _rand(40)), f"OPENAI key: {k}"),
        Plant("env password", "user", pw[0], f"run it with\nexport DB_PASSWORD={pw[0]}"),
        Plant("redis url", "user", pw[1], f"the cache is redis://:{pw[1]}@cache.internal:6379/0"),
        Plant(
            "url password with /",
            "user",
            (p := f"{_rand(8)}/{_rand(8)}"),
            f"DATABASE_URL=postgres://admin:{p}@db.internal:5432/app",
        ),
        Plant("mysql -p'…'", "user", pw[2], f"mysql -u root -p'{pw[2]}' app < dump.sql"),
        Plant("mysql -pPASS", "user", pw[3], f"try mysql -uroot -p{pw[3]} -h db app"),
        Plant("sshpass -p", "user", pw[4], f"sshpass -p '{pw[4]}' ssh deploy@web1"),
        Plant(
            "anthropic-key", "user", (k := "sk-ant-api03-" + _rand(40)), f"ANTHROPIC_API_KEY={k}"
        ),
        # --- the assistant's words
        Plant(
            "Authorization: Basic",
            "assistant",
            basic,
            f"curl -H 'Authorization: Basic {basic}' https://api.internal/v1",
        ),
        Plant(
            "bearer-token",
            "assistant",
            (k := _rand(32) + "." + _rand(12)),
            f"send `Authorization: Bearer {k}` with it",
        ),
        Plant("jwt", "assistant", jwt, f"the cookie holds {jwt}"),
        Plant(
            "slack-webhook",
            "assistant",
            (k := f"T{_rand(8)}/B{_rand(8)}/{_rand(24)}"),
            f"post to https://hooks.slack.com/services/{k}",
        ),
        Plant("stripe-key", "assistant", (k := "sk_live_" + _rand(24)), f"Stripe: {k}"),
        Plant(
            "next-line value (YAML)",
            "assistant",
            pw[5],
            f"Put this in the config:\n```yaml\nredis:\n  password:\n    {pw[5]}\n```",
        ),
        Plant(
            "secret_key_base",
            "assistant",
            (k := _rand(128, "0123456789abcdef")),
            f"config/credentials.yml:\nsecret_key_base: {k}",
        ),
        Plant(
            "Django SECRET_KEY",
            "assistant",
            (k := "django-insecure-" + _rand(20) + "$%^&*(" + _rand(10)),
            f"settings.py has SECRET_KEY = '{k}'",
        ),
        Plant("google-api-key", "assistant", (k := "AIza" + _rand(35)), f"maps key {k}"),
        Plant("sendgrid-key", "assistant", (k := f"SG.{_rand(22)}.{_rand(43)}"), f"SENDGRID {k}"),
        # --- a tool call's input: JSON, so quotes are escaped, and several keys
        Plant(
            ".env with quotes",
            "tool-input",
            pw[6],
            {"file_path": "/app/.env", "content": f'DB_PASSWORD="{pw[6]}"\nDEBUG=1\n'},
            "Write",
        ),
        Plant(
            "API_KEY beside it",
            "tool-input",
            keys[0],
            {"file_path": "/app/.env.local", "content": f'NODE_ENV=dev\nAPI_KEY="{keys[0]}"\n'},
            "Write",
        ),
        Plant(
            "next-line value in a file",
            "tool-input",
            pw[7],
            {"file_path": "config.yaml", "content": f"database:\n  password:\n    {pw[7]}\n"},
            "Write",
        ),
        Plant(
            "SECRET_KEY in an edit",
            "tool-input",
            keys[1],
            {
                "file_path": "settings.py",
                "old_string": 'SECRET_KEY = "changeme"',
                "new_string": f'SECRET_KEY = "{keys[1]}"',
            },
            "Edit",
        ),
        Plant(
            "aws-session-token",
            "tool-input",
            session,
            {
                "command": f"aws configure set aws_session_token {session}",
                "description": "Store the session token",
            },
        ),
        Plant(
            "curl -u user:pass",
            "tool-input",
            pw[8],
            {"command": f"curl -u admin:{pw[8]} https://api.internal", "description": "Call it"},
        ),
        Plant(
            "base64 PEM in a Kubernetes secret",
            "tool-input",
            k8s_key,
            {
                "file_path": "k8s/tls.yaml",
                "content": f"apiVersion: v1\nkind: Secret\ndata:\n  tls.key: {k8s_key}\n",
            },
            "Write",
        ),
        Plant(
            "password key in the input",
            "tool-input",
            pw[9],
            {"url": "https://db.internal", "user": "admin", "password": pw[9]},
            "mcp__db__connect",
        ),
        Plant(
            "client_secret in JSON content",
            "tool-input",
            keys[2],
            {"file_path": "creds.json", "content": json.dumps({"client_secret": keys[2]})},
            "Write",
        ),
        Plant(
            "Azure SAS signature",
            "tool-input",
            sig,
            {
                "command": f"curl 'https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026&sig={sig}'",
                "description": "Download the blob",
            },
        ),
        Plant(
            "azure-storage-key",
            "tool-input",
            account_key,
            {
                "file_path": "appsettings.json",
                "content": json.dumps(
                    {
                        "Storage": "DefaultEndpointsProtocol=https;AccountName=acct;"
                        f"AccountKey={account_key};EndpointSuffix=core.windows.net"
                    }
                ),
            },
            "Write",
        ),
        Plant(
            "password= in python -c",
            "tool-input",
            pw[10],
            {"command": f'python -c "connect(host=\\"db\\", password=\\"{pw[10]}\\")"'},
        ),
        Plant(
            "apiKey in TypeScript",
            "tool-input",
            keys[3],
            {
                "file_path": "src/config.ts",
                "old_string": "apiKey: process.env.KEY,",
                "new_string": f'apiKey: "{keys[3]}",',
            },
            "Edit",
        ),
        # --- a tool's result
        Plant(
            "aws credentials file",
            "tool-result",
            aws_secret,
            f"[default]\naws_access_key_id = {asia}\naws_secret_access_key = {aws_secret}\n",
        ),
        Plant(
            "sts JSON output",
            "tool-result",
            (k := _b64(40)),
            json.dumps({"Credentials": {"AccessKeyId": asia, "SecretAccessKey": k}}, indent=4),
        ),
        Plant(
            "env dump",
            "tool-result",
            npm,
            f"HOME=/root\nNPM_TOKEN={npm}\nPATH=/usr/bin\n",
        ),
        Plant("private-key", "tool-result", pem_body.split("\n")[0], f"$ cat id_rsa\n{pem}\n"),
        Plant(
            ".netrc",
            "tool-result",
            pw[11],
            f"machine api.heroku.com\n  login me@example.com\n  password {pw[11]}\n",
        ),
        Plant(
            "escaped JSON in a result",
            "tool-result",
            pw[12],
            json.dumps({"Env": [f"POSTGRES_PASSWORD={pw[12]}", "PGDATA=/var/lib"]}).replace(
                '"', '\\"'
            ),
        ),
        Plant("huggingface-token", "tool-result", (k := "hf_" + _rand(34)), f"HF_TOKEN={k}"),
        Plant(
            "telegram-bot-token",
            "tool-result",
            (k := "AA" + _rand(33)),
            f"bot url https://api.telegram.org/bot123456789:{k}/getMe",
        ),
        Plant("gitlab-token", "tool-result", (k := "glpat-" + _rand(20)), f"token: {k}"),
        Plant("pypi-token", "tool-result", (k := "pypi-AgEIcHlwaS5vcmc" + _rand(60)), f"pw = {k}"),
        Plant(
            "digitalocean-token",
            "tool-result",
            (k := "dop_v1_" + _rand(64, "0123456789abcdef")),
            f"DIGITALOCEAN_TOKEN: {k}",
        ),
        Plant("vault-token", "tool-result", (k := "hvs." + _rand(90)), f"Token: {k}"),
        Plant(
            "age-secret-key",
            "tool-result",
            (k := "AGE-SECRET-KEY-1" + _rand(58, string.ascii_uppercase + string.digits)),
            f"# created: 2026-01-01\n{k}\n",
        ),
        Plant("requirepass", "tool-result", pw[13], f"bind 0.0.0.0\nrequirepass {pw[13]}\n"),
        Plant(
            "<password> in XML",
            "tool-result",
            pw[14],
            f"<server>\n  <id>repo</id>\n  <password>{pw[14]}</password>\n</server>",
        ),
        Plant(
            "multiple keys on one line",
            "tool-result",
            pw[15],
            f"user=admin password={pw[15]} token={keys[4]} host=db",
        ),
        Plant("token beside it", "tool-result", keys[4], f"user=admin token={keys[4]}"),
    ]


PLANTS = _plants()


def record(plant: Plant, index: int, session: str = "s-plant") -> dict[str, Any]:
    """The transcript line that carries `plant`."""
    base = {
        "uuid": f"plant-{index}",
        "sessionId": session,
        "timestamp": f"2026-04-01T10:{index // 60:02d}:{index % 60:02d}Z",
        "cwd": "/work/app",
    }
    if plant.where == "user":
        return {**base, "type": "user", "message": {"role": "user", "content": plant.content}}
    if plant.where == "assistant":
        content = [{"type": "text", "text": plant.content}]
        return {**base, "type": "assistant", "message": {"role": "assistant", "content": content}}
    if plant.where == "tool-input":
        content = [
            {"type": "tool_use", "id": f"t{index}", "name": plant.tool, "input": plant.content}
        ]
        return {**base, "type": "assistant", "message": {"role": "assistant", "content": content}}
    content = [
        {
            "type": "tool_result",
            "tool_use_id": f"t{index}",
            "content": [{"type": "text", "text": plant.content}],
        }
    ]
    return {**base, "type": "user", "message": {"role": "user", "content": content}}


def transcript_lines(session: str = "s-plant") -> str:
    """Every plant, one transcript line each."""
    return "".join(json.dumps(record(p, i, session)) + "\n" for i, p in enumerate(PLANTS))


_WORDS = re.compile(r"[A-Za-z0-9]+")


def secret_words(secret: str) -> set[str]:
    """The words of `secret` a full-text index would hold (lowercased), long enough
    that no other text in the bench could contain them by chance."""
    return {w.lower() for w in _WORDS.findall(secret) if len(w) >= 8}


# --------------------------------------------------------------------------- crafted

MB = 1_000_000


def _repeat(unit: str, size: int = MB) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _mixed(size: int = MB) -> str:
    """Every trigger and separator shuffled, seeded: a shape no case below foresaw."""
    rng = random.Random(4)
    pieces = [
        "password", "pass", "pwd", "secret", "token", "api", "_key", "private", "://",
        "http", "=", ":", " = ", '"', "'", "\\\"", "\n", "  ", "-p", " -u ", "mysql",
        "sshpass", "curl", "Bearer ", "Authorization: Basic ", "sig=", "eyJ", "sk-",
        "ghp_", "AKIA", "LS0tLS1CRUdJTi", ":AA", "-----BEGIN PRIVATE KEY-----", "<", ">",
        "@", "/", "a", "Z", "9", "${", "(", "[",
    ]  # fmt: skip
    out: list[str] = []
    length = 0
    while length < size:
        piece = rng.choice(pieces) if rng.random() < 0.7 else _rand(rng.randint(1, 12))
        out.append(piece)
        length += len(piece)
    return "".join(out)[:size]


CRAFTED: dict[str, Callable[[], str]] = {
    "keyword run (passpass…)": lambda: _repeat("pass"),
    "key-ish run (password_password_…)": lambda: _repeat("password_"),
    "keywords between spaces (pass pass …)": lambda: _repeat("pass "),
    "keyword, then [\\w.-] to the end": lambda: "password" + _repeat("a.b-c_d", MB - 8),
    "keyword and separator, no value end": lambda: _repeat("password=" + "x" * 50),
    "keys with unterminated quotes": lambda: _repeat('"password": "xx '),
    "quotes that never close": lambda: "x = '" + _repeat("password='abc ", MB - 5),
    "colon chains (token:token:…)": lambda: _repeat("token:"),
    "one long value of keys (password=a:password=a…)": lambda: _repeat("password=a:"),
    "key, separator, newline (next-line value)": lambda: _repeat("token:\n"),
    "values joined by & , ; (password=x&password:x…)": lambda: _repeat("password=Xy1&password:"),
    "scheme without end (aaa…://)": lambda: _repeat("a", MB - 3) + "://",
    "URL userinfo without @": lambda: _repeat("http://user:" + "p" * 40 + " "),
    "scheme separators (://://…)": lambda: _repeat("x://"),
    "token prefixes (sk-sk-…)": lambda: _repeat("sk-"),
    "JWT heads (eyJeyJ…)": lambda: _repeat("eyJ"),
    "JWT parts without signature": lambda: _repeat("eyJ" + "a" * 20 + ".eyJ" + "b" * 200 + " "),
    "command flags (mysql -p -p …)": lambda: _repeat("mysql -p "),
    "PEM BEGIN without END": lambda: _repeat("-----BEGIN PRIVATE KEY-----\nabc\n"),
    "base64 PEM heads": lambda: _repeat("LS0tLS1CRUdJTi" + "A" * 10 + " "),
    "base64 PEM lines, none a key": lambda: _repeat("LS0tLS1CRUdJTi" + "A" * 100 + "\n"),
    "env lines (A_TOKEN=x)": lambda: _repeat("A_TOKEN=x\n"),
    "telegram tails": lambda: _repeat("123456789:AA"),
    "tag openers (<a<a…)": lambda: _repeat("<a"),
    "mixed triggers (seeded)": _mixed,
}
