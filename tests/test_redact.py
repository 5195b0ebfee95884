"""Secret redaction: every kind on a sample, the shapes it must leave alone, structured
tool input, secrets split by invisible characters, and properties: a secret dropped
into any text does not survive, and the Aho-Corasick scan finds what `str.find` finds."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa import secrets
from subrosa.archive import redact
from subrosa.archive.redact import KIND_NAMES, Redactor, may_hold_secret, scan
from subrosa.archive.transcripts import parse_lines
from subrosa.secrets import TRIGGERS, find_secret, find_spans, find_triggers, key_kind, lower
from tests.redaction_cases import CRAFTED

# kind -> (text holding the secret, the secret part that must disappear)
SAMPLES: dict[str, tuple[str, str]] = {
    "private-key": (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9QWERTYsecretMATERIAL\n"
        "-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEA7bq9QWERTYsecretMATERIAL",
    ),
    "aws-access-key": ("export AWS_ACCESS_KEY_ID=AKIAQWERTYUIOPASDFGH", "AKIAQWERTYUIOPASDFGH"),
    "aws-session-token": (
        "set it to FwoGZXIvYXdzEBYaDH" + "Qx7Rk2Lm9" * 12 + " now",
        "FwoGZXIvYXdzEBYaDH" + "Qx7Rk2Lm9" * 12,
    ),
    "aws-secret-key": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "github-token": (
        "git clone https://ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78@github.com/x/y",
        "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78",
    ),
    "github-pat": (
        "GH github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    "gitlab-token": ("use glpat-Xy12Zw34Vu56Ts78Rq90", "glpat-Xy12Zw34Vu56Ts78Rq90"),
    "slack-token": ("SLACK xoxb-1234567890-0987654321-AbCdEfGhIjKl", "xoxb-1234567890-0987654321"),
    "slack-webhook": (
        "post to https://hooks.slack.com/services/T0001/B0002/XyZsecretHookPath",
        "XyZsecretHookPath",
    ),
    "anthropic-key": (
        "ANTHROPIC sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    ),
    "openai-key": (
        "the key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789",
    ),
    "stripe-key": ("stripe sk_live_51AbCdEfGhIjKlMnOpQrStUv", "sk_live_51AbCdEfGhIjKlMnOpQrStUv"),
    "google-api-key": (
        "maps AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    ),
    "google-oauth-secret": (
        "client GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx",
        "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    "jwt": (
        "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    "npm-token": (
        "//registry/:_authToken npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    "pypi-token": (
        "upload with pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAAC",
        "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAAC",
    ),
    "sendgrid-key": (
        "SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG",
    ),
    "huggingface-token": (
        "HF hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    ),
    "digitalocean-token": ("do dop_v1_" + "a1" * 32, "a1" * 32),
    "shopify-token": ("shop shpat_" + "0f" * 16, "0f" * 16),
    "mailgun-key": ("mg key-0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    "age-secret-key": (
        "AGE-SECRET-KEY-1" + "QWERTYUIOPASDFGHJKLZXCVBNM0123456789QWERTYUIOPASDFGHJKLZXC",
        "QWERTYUIOPASDFGHJKLZXCVBNM0123456789QWERTYUIOPASDFGHJKLZXC",
    ),
    "vault-token": ("VAULT hvs.CAESIAbCdEfGhIjKlMnOpQrStUvWx", "hvs.CAESIAbCdEfGhIjKlMnOpQrStUvWx"),
    "databricks-token": (
        "dbx dapi0123456789abcdef0123456789abcdef",
        "dapi0123456789abcdef0123456789abcdef",
    ),
    "django-secret-key": (
        "generated django-insecure-k9#x!2$m@q7^z&w*f(8)l_e+r0p3v",
        "django-insecure-k9#x!2$m@q7^z&w*f(8)l_e+r0p3v",
    ),
    "azure-storage-key": (
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "AbCd1234" * 11 + "==",
        "AbCd1234" * 11,
    ),
    "azure-sas-signature": (
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=AbCdEfGh%2BIjKlMnOpQr%3D&se=1",
        "AbCdEfGh%2BIjKlMnOpQr%3D",
    ),
    "telegram-bot-token": (
        "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ),
    "url-password": (
        "DATABASE_URL=postgres://admin:Sup3rS3cretPw@db.internal:5432/app",
        "Sup3rS3cretPw",
    ),
    "basic-auth": ("curl -H 'Authorization: Basic YWRtaW46aHVudGVyMg=='", "YWRtaW46aHVudGVyMg=="),
    "bearer-token": (
        "curl -H 'Authorization: Bearer AbCdEfGhIjKlMnOpQrStUvWx.yz0123456789'",
        "AbCdEfGhIjKlMnOpQrStUvWx.yz0123456789",
    ),
    "mysql-password": ("mysql -u root -p'Sup3r!Secret' app", "Sup3r!Secret"),
    "sshpass-password": ("sshpass -p 'hunter2pw' ssh admin@web1", "hunter2pw"),
    "curl-password": ("curl -u admin:Hunter2Pw https://api.internal", "Hunter2Pw"),
    "password": ("export DB_PASSWORD=hunter2hunter2", "hunter2hunter2"),
    "secret": ("client_secret: 'Zm9vYmFyYmF6cXV4'", "Zm9vYmFyYmF6cXV4"),
    "secret-key": ("SECRET_KEY = 'k3y!x@abcdefghij'", "k3y!x@abcdefghij"),
    "rails-secret-key-base": (
        "secret_key_base: 9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c",
    ),
    "token": ("GITHUB_TOKEN=abcd1234efgh5678", "abcd1234efgh5678"),
    "api-key": ("X-Api-Key: abcd1234efgh", "abcd1234efgh"),
}


def test_every_kind_has_a_sample() -> None:
    assert len(KIND_NAMES) >= 40
    assert set(SAMPLES) == set(KIND_NAMES)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_kind_is_redacted(kind: str) -> None:
    text, secret = SAMPLES[kind]
    redactor = Redactor()
    out = redactor(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert redactor.counts[kind] >= 1
    assert find_secret(text) == kind  # the standard-library path agrees


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # escaped quotes: a tool's JSON as text, or a command with \" inside
        ('{\\"password\\": \\"hunter2xx\\"}', "hunter2xx"),
        ('python -c "connect(password=\\"Tr0ub4dor\\")"', "Tr0ub4dor"),
        ('{"DB_PASSWORD":"s3cr3t-value","user":"me"}', "s3cr3t-value"),
        # a value on the line after its key, or in a YAML block
        ("password:\n  hunter2xx\n", "hunter2xx"),
        ("redis:\n  password:\n    Xk29!pq\nnext: 1", "Xk29!pq"),
        ("token: |\n  abc123def456\n", "abc123def456"),
        # several keys on one line
        ("user=me password=Pa55word! token=zz99yy88 host=db", "Pa55word!"),
        ("user=me password=Pa55word! token=zz99yy88 host=db", "zz99yy88"),
        # the kinds the review found missing
        ("redis://:Pw0rd2024@cache:6379/0", "Pw0rd2024"),
        ("postgres://admin:Ab12/Cd34@db:5432/app", "Ab12/Cd34"),
        ("secret_key_base: 0a1b2c3d4e5f60718293a4b5c6d7e8f9", "0a1b2c3d4e5f60718293a4b5c6d7e8f9"),
        ("SECRET_KEY = 'django-insecure-(x8!q)$k2'", "django-insecure-(x8!q)$k2"),
        ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr" + "a1B2c3D4" * 10, "IQoJb3JpZ2luX2VjEJr"),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
        ("?sv=2022&sig=q8PWNa%2Bdr4Zz5l0Ekd%3D&se=x", "q8PWNa%2Bdr4Zz5l0Ekd%3D"),
        ("mysql -uroot -pHunt3r22 app", "Hunt3r22"),
        ("sshpass -pHunt3r22 ssh web", "Hunt3r22"),
        (
            "  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2",
            "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t",
        ),
        ("PGPASSWORD=Zx81!qq psql -h db", "Zx81!qq"),
        ("<password>Hunt3r22</password>", "Hunt3r22"),
        ("requirepass Hunt3r22\n", "Hunt3r22"),
        ("machine api login me password Hunt3r22\n", "Hunt3r22"),
        ("password: str = 'Hunt3r22'", "Hunt3r22"),
        ("clientSecret: 'AbCdEf123456'", "AbCdEf123456"),
    ],
)
def test_hard_shapes_are_redacted(text: str, secret: str) -> None:
    assert secret not in Redactor()(text)
    assert find_secret(text) is not None


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # `&`, `,` or `;` inside an unquoted value is part of it: only the part before
        # it was redacted, and the rest of the password was stored
        ("password = Tr0ub4dor&3xyzzy", ""),
        ("export DB_PASSWORD=Pa55,w0rd!x", ""),
        ("token=abc123def;ghi789 next", " next"),
        # a separator where a new key follows (a URL's query, a connection string,
        # a list of pairs) or after which a space comes still ends the value
        ("?password=Hunt3r22&user=me", "&user=me"),
        ("Server=db;Password=Hunt3r22;Database=app", ";Database=app"),
        ("password=Hunt3r22, then we deployed", ", then we deployed"),
    ],
)
def test_an_unquoted_value_runs_past_a_delimiter_inside_it(text: str, kept: str) -> None:
    redacted = Redactor()(text)
    assert redacted.count("[REDACTED:") == 1, redacted
    assert redacted[redacted.index("]") + 1 :] == kept, redacted
    assert find_secret(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "the task-abcdefghijklmnopqrstuvwxyz0123 finished",  # "sk-" inside a word
        "password = ${DB_PASSWORD}",  # a reference, not a value
        "password: '<your password here>'",
        "if user.password:\n    check(user)",  # code, not an assignment of a value
        "passive: PassiveFlag = PassiveFlag.NONE",  # a whole key is needed
        "password_hash = hash_password(raw)",
        "token = tokenize.generate_tokens(readline)",
        "token: str\nsecret: Optional[str] = None",
        "self.password = password",
        "PASSWORD_HASHERS = [",
        'getpass(prompt="Password: ")',
        "see https://example.com/path and http://localhost:8080/x",
        "http://localhost:5173/@vite/client",
        "the keyboard and the token bucket",
        "tokens = 12345678 and compass = 12345678",
        "PWD=/home/user/project",
        "password:\n  other_key: 1\n",
        "mysql -u root -p app",  # -p alone prompts
        "def password(self) -> str:",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redactor = Redactor()
    assert redactor(text) == text
    assert redactor.total == 0
    assert find_secret(text) is None


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(SAMPLES)),
    before=st.text(max_size=40),
    after=st.text(max_size=40),
)
def test_a_secret_never_survives_in_any_surroundings(kind: str, before: str, after: str) -> None:
    text, secret = SAMPLES[kind]
    assert secret not in Redactor()(f"{before}\n{text}\n{after}")


def test_a_secret_split_by_invisible_characters_is_found() -> None:
    text = "AKIA\u200bQWERTYUIOP\u2060ASDFGH and password=hun\ufe0fter22x"
    out = Redactor()(text)
    assert "QWERTY" not in out and "ter22x" not in out
    assert out == "[REDACTED:aws-access-key] and password=[REDACTED:password]"
    assert find_secret("x AKIA\u200bQWERTYUIOPASDFGH") == "aws-access-key"


def test_structured_input_is_redacted_before_it_is_encoded() -> None:
    lines = [
        json.dumps(
            {
                "type": "assistant",
                "uuid": "a1",
                "sessionId": "s",
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "name": "Write",
                            "input": {
                                "file_path": ".env",
                                "content": 'DB_PASSWORD="hunter2xx"\nAPI_KEY="k3y-value-9"\n',
                            },
                        },
                        {
                            "type": "tool_use",
                            "name": "connect",
                            "input": {
                                "host": "db",
                                "password": "plainword",
                                "nested": [{"token": "t0k3n-v4lue"}],
                            },
                        },
                        {"type": "tool_use", "name": "login", "input": {"password": "plainword"}},
                    ],
                },
            }
        ).encode()
    ]
    redactor = Redactor()
    text = parse_lines(lines, "s", redactor=redactor).messages[0].text
    for secret in ("hunter2xx", "k3y-value-9", "plainword", "t0k3n-v4lue"):
        assert secret not in text
    assert '\\"[REDACTED:password]\\"' in text  # the quotes around it are still escaped
    assert redactor.counts == {"password": 3, "api-key": 1, "token": 1}


def test_deep_input_is_cut_not_a_recursion_error() -> None:
    deep: object = "AKIAQWERTYUIOPASDFGH"
    for _ in range(200):
        deep = {"k": deep, "also": 1}
    line = json.dumps(
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "name": "x", "input": deep}],
            },
        }
    )
    text = parse_lines([line.encode()], "s", redactor=Redactor()).messages[0].text
    assert "AKIAQWERTYUIOPASDFGH" not in text and "nested too deep" in text


def test_key_kind_needs_the_last_components() -> None:
    assert key_kind("DB_PASSWORD") == "password"
    assert key_kind("dbPassword") == key_kind("PGPASSWORD") == "password"
    assert key_kind("secretKeyBase") == "rails-secret-key-base"
    assert key_kind("AWS_SECRET_ACCESS_KEY") == "aws-secret-key"
    assert key_kind("aws_session_token") == "aws-session-token"
    assert key_kind("X-Api-Key") == key_kind("apikey") == "api-key"
    for name in ("passive", "password_hash", "tokens", "bypass", "compass", "api", "key"):
        assert key_kind(name) is None, name


# The Aho-Corasick scan must find exactly what str.find finds, and redaction through
# it must equal the standard-library path (what `fact upsert` and the witness use).
_PIECES = sorted(
    {*TRIGGERS, *(t.upper() for t in TRIGGERS), *(text for text, _ in SAMPLES.values())}
    | {"İ", "ß", "ﬁ", "Σ", "日本語", "😀", " = ", ": ", "=", "\n", "x" * 25, '"', "\\", "\u200b"}
    # The Kelvin sign lowercases to an ASCII `k`; invisible characters of two to four
    # bytes of UTF-8.
    | {"\u212a", "\u212aey-", "to\u212aen", "\u00ad", "\u2060", "\ufeff", "\U000e0041"}
)
_MIXED = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=12).map(
    "".join
)


@settings(max_examples=400, deadline=None)
@given(text=_MIXED)
def test_the_automaton_finds_what_plain_search_finds(text: str) -> None:
    lowered = lower(text)
    assert len(lowered) == len(text)
    assert scan(lowered) == find_triggers(lowered)
    redactor = Redactor()
    expected = secrets.look_through(text, find_spans)
    assert redactor(text) == secrets.replace(text, expected)
    # The one pass over the bytes (redact._look) finds what the two searches find.
    assert redact._look(text) == (find_triggers(lowered), secrets.has_invisible(text))
    assert may_hold_secret(text) == bool(find_triggers(lowered) or secrets.has_invisible(text))


def test_the_byte_patterns_are_the_invisible_characters() -> None:
    """redact._look finds secrets.look_through's invisible characters by their UTF-8
    forms, in the lowercased text: lowercasing neither makes nor removes one."""
    invisible = set()
    for code in range(0x80, sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        character = chr(code)
        if secrets.has_invisible(character):
            invisible.add(character.encode()[:2] if code >> 12 == 0xE0 else character.encode())
            assert character.lower() == character
        else:
            assert not secrets.has_invisible(character.lower()), hex(code)
    assert set(redact._INVISIBLE_UTF8) == invisible
    # F3 A0 begins the four bytes of U+E0000-U+E0FFF and of nothing else.
    assert "\U000e0000".encode()[:2] == "\U000e0fff".encode()[:2] == b"\xf3\xa0"
    assert "\U000df000".encode()[:2] != b"\xf3\xa0" != "\U000e1000".encode()[:2]


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_megabytes_are_redacted_to_the_end(name: str) -> None:
    """Each crafted 1 MB text finishes (bench/redaction.py times it) and comes out whole
    or shorter: redaction never loops, never drops the text after a match."""
    text = CRAFTED[name]()
    out = Redactor()(text)
    assert len(out) <= len(text) + 40 * out.count("[REDACTED:")
    assert out.endswith(text[-20:]) or "[REDACTED:" in out[-4200:]
