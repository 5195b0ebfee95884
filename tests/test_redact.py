"""Secret redaction: every kind on a sample, the shapes it must leave alone, and a
property: a secret dropped into any text does not survive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.archive.redact import KIND_NAMES, KINDS, Redactor, candidates

# kind -> (text holding the secret, the secret part that must disappear)
SAMPLES: dict[str, tuple[str, str]] = {
    "private-key": (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9QWERTYsecretMATERIAL\n"
        "-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEA7bq9QWERTYsecretMATERIAL",
    ),
    "aws-access-key": ("export AWS_ACCESS_KEY_ID=AKIAQWERTYUIOPASDFGH", "AKIAQWERTYUIOPASDFGH"),
    "aws-secret-key": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "github-token": (
        "git clone https://ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78@github.com/x/y",
        "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78",
    ),
    "github-pat": (
        "GH_TOKEN github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    "gitlab-token": ("token glpat-Xy12Zw34Vu56Ts78Rq90", "glpat-Xy12Zw34Vu56Ts78Rq90"),
    "slack-token": ("SLACK=xoxb-1234567890-0987654321-AbCdEfGhIjKl", "xoxb-1234567890-0987654321"),
    "slack-webhook": (
        "post to https://hooks.slack.com/services/T0001/B0002/XyZsecretHookPath",
        "XyZsecretHookPath",
    ),
    "anthropic-key": (
        "ANTHROPIC_API_KEY sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
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
        "client secret GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx",
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
        "password pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAAC",
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
    "telegram-bot-token": (
        "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ),
    "mailgun-key": ("mg key-0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    "azure-storage-key": (
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "AbCd1234" * 11 + "==",
        "AbCd1234" * 11,
    ),
    "url-password": (
        "DATABASE_URL=postgres://admin:Sup3rS3cretPw@db.internal:5432/app",
        "Sup3rS3cretPw",
    ),
    "bearer-token": (
        "curl -H 'Authorization: Bearer AbCdEfGhIjKlMnOpQrStUvWx.yz0123456789'",
        "AbCdEfGhIjKlMnOpQrStUvWx.yz0123456789",
    ),
    "password": ("export DB_PASSWORD=hunter2hunter2", "hunter2hunter2"),
}


def test_at_least_twenty_kinds_each_with_a_sample() -> None:
    assert len(KIND_NAMES) >= 20
    assert set(SAMPLES) == set(KIND_NAMES)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_kind_is_redacted(kind: str) -> None:
    text, secret = SAMPLES[kind]
    redactor = Redactor()
    out = redactor(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert redactor.counts[kind] >= 1


@pytest.mark.parametrize(
    "text",
    [
        "the task-abcdefghijklmnopqrstuvwxyz0123 finished",  # "sk-" inside a word
        "password = ${DB_PASSWORD}",  # a reference, not a value
        "if user.password:\n    check(user)",  # code, not an assignment of a value
        "see https://example.com/path and http://localhost:8080/x",
        "the keyboard and the token bucket",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redactor = Redactor()
    assert redactor(text) == text
    assert redactor.total == 0


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(sorted(SAMPLES)),
    before=st.text(max_size=40),
    after=st.text(max_size=40),
)
def test_a_secret_never_survives_in_any_surroundings(kind: str, before: str, after: str) -> None:
    text, secret = SAMPLES[kind]
    assert secret not in Redactor()(f"{before} {text} {after}")


# The trigger scan (one Aho-Corasick pass over the lowercased text) must open exactly
# the kinds that a plain `in` test of every trigger opens, and the redactor using the
# scan's keyword offsets must give what re-finding the keywords in each text gives.
_PIECES = sorted(
    {t for k in KINDS for t in k.triggers}
    | {t for k in KINDS for t in k.lower_triggers}
    | {t.upper() for k in KINDS for t in k.lower_triggers}
    | {text for text, _ in SAMPLES.values()}
    | {"İ", "ß", "ﬁ", "Σ", "日本語", "😀", " = ", ": ", "=", "\n", "x" * 25, "Token ", "PASS"}
)
_MIXED = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=12).map(
    "".join
)


def _naive_candidates(text: str) -> list[int]:
    lowered = text.lower()
    return [
        index
        for index, kind in enumerate(KINDS)
        if any(t in text for t in kind.triggers) or any(t in lowered for t in kind.lower_triggers)
    ]


def _reference_redact(text: str) -> tuple[str, dict[str, int]]:
    """Each candidate kind applied on its own, anchored keywords found by str.find."""
    redactor = Redactor()
    for index in _naive_candidates(text):
        text = redactor._apply(KINDS[index], text)
    return text, dict(redactor.counts)


@settings(max_examples=400, deadline=None)
@given(text=_MIXED)
def test_the_trigger_scan_opens_exactly_the_kinds_plain_search_opens(text: str) -> None:
    assert candidates(text) == _naive_candidates(text)
    redactor = Redactor()
    assert (redactor(text), dict(redactor.counts)) == _reference_redact(text)


def test_every_keyword_occurrence_is_tried_even_overlapping_ones() -> None:
    text = (
        "passpassword=hunter2hunter2 then TOKEN tokentokentoken0123456789abcdef"
        " and api_key=zzzzzzzz"
    )
    redactor = Redactor()
    out = redactor(text)
    assert "hunter2hunter2" not in out
    assert "zzzzzzzz" not in out
    assert (out, dict(redactor.counts)) == _reference_redact(text)


def test_length_changing_lowercase_still_redacts() -> None:
    # "İ".lower() is two characters: the scan's offsets no longer fit the text.
    text = "İİİ password=abcdefgh123 and bearer abcdefghijklmnopqrstuvwxyz"
    out = Redactor()(text)
    assert "abcdefgh123" not in out
    assert "abcdefghijklmnopqrstuvwxyz" not in out
