"""Secrets are replaced before anything reaches disk, metadata or git; the linter learns the kind only."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awp_pipelines.core.records.redact import (
    REDACTED,
    SECRET_PATTERNS,
    Redactor,
    _may_hold_pattern,
    _replace,
    find_secrets,
    redact,
    redact_obj,
    secret_named,
)

# Built at runtime so this file itself holds no secret-shaped literal a scanner would flag.
ANTHROPIC = "sk-ant-" + "api03-" + "A1b2C3d4E5f6G7h8I9j0"
OPENAI = "sk-" + "proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
GITHUB = "ghp_" + "a" * 36
GITHUB_PAT = "github_pat_" + "11ABCDEFG0" * 3
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-abcdefABCDEF"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcdef\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize("secret", [ANTHROPIC, OPENAI, GITHUB, GITHUB_PAT, AWS, SLACK, PEM])
def test_provider_key_shapes_are_replaced_wherever_they_appear(secret: str) -> None:
    text = f"before {secret} after"
    out = redact(text)
    assert secret not in out
    assert out == f"before {REDACTED} after"


@pytest.mark.parametrize("line, kept", [
    ("api_key = hunter2hunter2", "api_key = "),
    ("GITHUB_TOKEN=abc.def-123", "GITHUB_TOKEN="),
    ("password: 'correct horse battery'", "password: '"),
    ('{"client_secret": "s3cr3t value"}', '{"client_secret": "'),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY="),
    ("Authorization: Bearer abcdefghijklmnop.qrs", "Authorization: Bearer "),
])
def test_assignments_and_bearer_tokens_keep_the_name_and_lose_the_value(line: str, kept: str) -> None:
    out = redact(line)
    assert out.startswith(kept + REDACTED)
    assert "hunter2" not in out and "horse" not in out and "s3cr3t" not in out and "abcdefghij" not in out


@pytest.mark.parametrize("text", [
    "max_tokens: 4096",
    "input_tokens=12 output_tokens=7",
    "api_key: ${ANTHROPIC_API_KEY}",
    "token: <your token here>",
    "the tokenizer splits words",
    "sk-short",
])
def test_ordinary_text_and_secret_references_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_literal_account_values_are_redacted_even_without_a_known_shape() -> None:
    out = redact("login as plainpassword42 then echo abc", extra_values=["plainpassword42", "abc"])
    assert out == f"login as {REDACTED} then echo abc"  # 'abc' is too short to redact safely


_NOT_IN_THE_MARK = st.characters(blacklist_characters="[]REDACT", blacklist_categories=("Cs",))


@settings(max_examples=300, deadline=None)
@given(st.text(_NOT_IN_THE_MARK, min_size=6, max_size=12), st.text(_NOT_IN_THE_MARK, max_size=20),
       st.text(_NOT_IN_THE_MARK, max_size=20), st.lists(st.text(_NOT_IN_THE_MARK, min_size=6, max_size=12), max_size=3))
def test_a_literal_is_redacted_wherever_it_is_whatever_its_characters(secret: str, before: str, after: str,
                                                                       others: list[str]) -> None:
    """Literals are looked for only in texts holding their rarest character: never a reason to miss one."""
    out = Redactor((secret, *others)).obj({"k": [before + secret + after]})["k"][0]
    assert secret not in out


def test_redaction_is_idempotent() -> None:
    once = redact(f"OPENAI_API_KEY={OPENAI} and Bearer {GITHUB}")
    assert redact(once) == once
    assert OPENAI not in once and GITHUB not in once


def test_redact_obj_walks_nested_containers_and_secret_named_keys() -> None:
    obj = {
        "env": {"ANTHROPIC_API_KEY": ANTHROPIC, "PATH": "/usr/bin"},
        "items": [f"key {OPENAI}", 3, None, True, ("t", GITHUB)],
        "token": "opaque-value-without-shape",
        "input_tokens": 12,
        "session_token": "",
    }
    out = redact_obj(obj, extra_values=["/usr/bin-never"])
    assert out["env"] == {"ANTHROPIC_API_KEY": REDACTED, "PATH": "/usr/bin"}
    assert out["items"] == [f"key {REDACTED}", 3, None, True, ("t", REDACTED)]
    assert out["token"] == REDACTED
    assert out["input_tokens"] == 12
    assert out["session_token"] == ""
    assert obj["env"]["ANTHROPIC_API_KEY"] == ANTHROPIC  # the input is not mutated


def test_find_secrets_reports_line_and_kind_but_never_the_value() -> None:
    text = "\n".join([
        "name: demo",
        f"OPENAI_API_KEY={OPENAI}",
        "ok line",
        f"aws: {AWS}",
        PEM,
        "password: hunter2hunter2",
    ])
    found = find_secrets(text)
    assert found == [(2, "openai_key"), (4, "aws_access_key"), (5, "private_key"), (9, "assignment")]
    flat = repr(found)
    assert OPENAI not in flat and "hunter2" not in flat


def test_find_secrets_on_clean_text_is_empty() -> None:
    assert find_secrets("max_tokens: 10\ntoken: ${GH_TOKEN}\n") == []


# The prefilter (`_may_hold_pattern`) only decides whether the regex passes run: with it, redaction must be
# exactly what every pattern applied to every text gives.
_PIECES = ["sk-", "sk-ant-", "AKIA", "ASIA", "xoxb-", "ghp_", "github_pat_", "-----BEGIN ", "RSA ", "PRIVATE KEY",
           "-----", "bearer ", "Bearer\t", "BEARER ", "api", "API", "_key", "-key", "token", "TOKEN", "secret",
           "Secret", "password", "passwd", "access_", ":", "=", " = ", '"', "'", " ", "\n", "x", "Q", "0123456789",
           "ABCDEFGHIJKLMNOP", "abcdefghijklmnopqrstuvwx", "ı", "ſ", "\u212a", "İ", "é", "${", "<", "[REDACTED]"]


def _reference(text: str) -> str:
    for pattern in SECRET_PATTERNS.values():
        text = _replace(pattern, text)
    return text


_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)


def _redacts_as_every_pattern_would(text: str) -> None:
    assert redact(text) == _reference(text)
    if any(pattern.search(text) for pattern in SECRET_PATTERNS.values()):
        assert _may_hold_pattern(text)


@settings(max_examples=3000, deadline=None)
@given(_TEXTS)
def test_the_prefilter_never_skips_a_text_a_pattern_would_change(text: str) -> None:
    """The large run (marked slow in tests/conftest.py)."""
    _redacts_as_every_pattern_would(text)


@settings(max_examples=200, deadline=None)
@given(_TEXTS)
def test_the_prefilter_never_skips_a_text_a_pattern_would_change_small(text: str) -> None:
    """The same property on fewer examples, for `make test-fast`."""
    _redacts_as_every_pattern_would(text)


def test_the_prefilter_knows_every_letter_ignorecase_matches_in_an_anchor() -> None:
    """`(?i)` lets an anchor's `i`, `k` or `s` match a non-ASCII letter (ı, İ, ſ, the Kelvin sign): an
    assignment or bearer token spelled with one must still reach the regex passes."""
    samples = ["api_key= abcdefghijkl", "token: abcdefghijkl", "secret= abcdefghijkl", "password= abcdefghijkl",
               "bearer abcdefghijkl", "token: x", "secret= y", "api_key= z", "passwd= w"]  # short ones too
    folded = 0
    for letter in sorted(set("".join(samples[i].split()[0] for i in range(len(samples))))):
        matcher = re.compile(f"(?i){re.escape(letter)}")
        others = [chr(c) for c in range(128, sys.maxunicode + 1) if matcher.fullmatch(chr(c))]
        for char in others:
            for sample in samples:
                key, value = sample.split(" ", 1)
                text = key.replace(letter, char) + " " + value
                if _reference(text) != text:
                    folded += 1
                    assert _may_hold_pattern(text) and redact(text) == _reference(text), (sample, hex(ord(char)))
    assert folded >= 4  # the four letters the re module folds onto i, k and s were tried


@pytest.mark.parametrize(("name", "secret"), [
    ("AWP_PG_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True), ("GITHUB_TOKEN", True), ("SENTRY_DSN", True),
    ("DATABASE_URL", True), ("npm_config__auth_token", True), ("MY_API_KEYS", True), ("PATH", False),
    ("KEYBOARD", False), ("TOKENIZERS_PARALLELISM", False), ("PASSTHROUGH", False), ("HOME", False)])
def test_a_variable_is_secret_named_by_its_last_word(name: str, secret: bool) -> None:
    assert secret_named(name) is secret


def test_the_runners_secret_named_values_are_redacted_and_nothing_else_of_its_environment() -> None:
    env = {"AWP_PG_PASSWORD": "canary-pg-5d1e", "PATH": "/usr/local/bin:/usr/bin", "SHORT_TOKEN": "abc"}
    redactor = Redactor().with_runner_secrets(env)
    assert redactor("pw canary-pg-5d1e in PATH /usr/local/bin:/usr/bin abc") == \
        f"pw {REDACTED} in PATH /usr/local/bin:/usr/bin abc"  # a value under 6 characters stays: see MIN_LITERAL
