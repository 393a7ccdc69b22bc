"""Secrets never leave the process: redact them from events, transcripts, messages and commit trailers.

Two sources of truth: patterns for API-key-like strings (any provider's, found anywhere), and the literal
credential values of the account in use (known exactly, so found even when they match no pattern).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

REDACTED = "[REDACTED]"
# Shorter literals would redact ordinary words; no real credential is this short.
MIN_LITERAL_LENGTH = 6

# A value that names a secret instead of holding one: `${ANTHROPIC_API_KEY}`, `<your key>`, already redacted.
_NOT_A_VALUE = r"(?!\$|<|\[REDACTED\])"

# kind -> pattern. Where a pattern has groups named `secret*`, only the first that matched is replaced (the
# key name stays readable: `api_key=[REDACTED]`); otherwise the whole match is. Specific kinds come first:
# find_secrets reports the first kind that claims a span, and redact() replaces them in this order.
SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "private_key": re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    ),
    "anthropic_key": re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    "openai_key": re.compile(r"\bsk-(?!ant-)[A-Za-z0-9_\-]{16,}"),
    "github_token": re.compile(r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    "aws_access_key": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "slack_token": re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    "bearer_token": re.compile(r"(?i)\bbearer\s+" + _NOT_A_VALUE + r"(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)"),
    "assignment": re.compile(
        r"(?i)(?:api[_-]?key|token|secret|password|passwd)(?:[_-]?(?:access[_-]?)?key)?[\"']?\s*[:=]\s*"
        r"(?:\"" + _NOT_A_VALUE + r"(?P<secret_dq>[^\"\n]+)\""
        r"|'" + _NOT_A_VALUE + r"(?P<secret_sq>[^'\n]+)'"
        r"|" + _NOT_A_VALUE + r"(?P<secret>[^\s\"',;]+))"
    ),
}

# A mapping key whose string value is a secret as a whole, whatever it looks like (`"token": "hunter22"`).
_SECRET_KEY = re.compile(r"(?i)(?:^|[_\-.])(?:api[_-]?key|token|secret|password|passwd|credentials?)$")


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    for name, value in match.groupdict().items():
        if name.startswith("secret") and value is not None:
            return match.span(name)
    return match.span()


def _replace(pattern: re.Pattern[str], text: str) -> str:
    def sub(match: re.Match[str]) -> str:
        start, end = _secret_span(match)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + REDACTED + whole[end - offset:]

    return pattern.sub(sub, text)


def _literals(extra_values: Iterable[str]) -> list[str]:
    values = {v for v in extra_values if isinstance(v, str) and len(v) >= MIN_LITERAL_LENGTH}
    # Longest first: a secret that contains another is replaced whole.
    return sorted(values, key=len, reverse=True)


# Characters by how often prose and code hold them, most often first (digits are common in tool output). A
# literal is searched for only in a text holding its rarest character: that test is one memchr scan, the full
# search is many times slower.
_COMMON_CHARS = " etaoinsrhldcumfpgwybv\n.,-_/:'\"()=0123456789kxjqzETAOINSRHLDCUMFPGWYBVKXJQZ"
_RANK = {char: rank for rank, char in enumerate(_COMMON_CHARS)}

Gated = tuple[tuple[str, str], ...]


def _gate_literals(literals: Iterable[str]) -> Gated:
    """(rarest character, literal) for each literal, in the order given."""
    return tuple((max(value, key=lambda c: _RANK.get(c, len(_RANK))), value) for value in literals)


# Every pattern above needs a literal anchor; text without any skips the eight regex passes (agent streams
# are gigabytes of prose and tool output, and those passes dominated their cost). The anchors, case as the
# patterns match: `AKIA`/`ASIA` (aws); `sk-`, `xox?-` or `-----BEGIN` (keys, slack, private keys); a GitHub
# prefix; `bearer` in any case; and `:` or `=` with api/token/secret/passw in any case (an assignment needs
# one of those signs). A single character gates each group (memchr); the case-sensitive groups are then one
# regex search that starts at that character (a substring search per anchor cost several times more on code).
_AWS_ANCHOR = re.compile(r"A[KS]IA")
_DASH_ANCHOR = re.compile(r"-(?:(?<=sk-)|(?<=xox[abposr]-)|----BEGIN)")
_UNDERSCORE_ANCHOR = re.compile(r"_(?:(?<=gh[pousr]_)|(?<=github_pat_))")
# Under IGNORECASE a pattern's `i`, `k` and `s` also match these; lower() maps `K` (Kelvin) and `İ` itself.
_FOLD = str.maketrans({"ı": "i", "ſ": "s"})


_SHORTEST_MATCH = 7  # `token:x`, an assignment; each other pattern needs 15 characters or more (slack, bearer)
_SHORTEST_OTHER = 15


def _may_hold_pattern(text: str) -> bool:
    if len(text) < _SHORTEST_OTHER:  # tool names, call ids, short commands: only an assignment fits
        return len(text) >= _SHORTEST_MATCH and (":" in text or "=" in text) and _assignment_anchor(_folded(text))
    if "A" in text and "I" in text and _AWS_ANCHOR.search(text):
        return True
    if "-" in text and ("k" in text or "x" in text or "B" in text) and _DASH_ANCHOR.search(text):
        return True
    if "_" in text and _UNDERSCORE_ANCHOR.search(text):
        return True
    low = _folded(text)
    if "bearer" in low:
        return True
    return (":" in text or "=" in text) and _assignment_anchor(low)


def _folded(text: str) -> str:
    return text.lower() if text.isascii() else text.lower().translate(_FOLD)


def _assignment_anchor(low: str) -> bool:
    """`low` names an api key, token, secret or password (a generator per string cost more than the scans)."""
    return "api" in low or "token" in low or "secret" in low or "passw" in low


def redact(text: str, extra_values: Iterable[str] = ()) -> str:
    """`text` with every pattern hit and every given literal secret (length >= 6) replaced by [REDACTED]."""
    return _redact_text(text, _gate_literals(_literals(extra_values)))


def _redact_text(text: str, literals: Gated) -> str:
    for rare, value in literals:
        if rare in text and value in text:
            text = text.replace(value, REDACTED)
    if _may_hold_pattern(text):
        for pattern in SECRET_PATTERNS.values():
            text = _replace(pattern, text)
    return text


def redact_obj(obj: Any, extra_values: Iterable[str] = ()) -> Any:
    """A copy of `obj` with every string redacted, recursively through dicts, lists and tuples.

    A string stored under a secret-sounding key (`token`, `api_key`, `password`, ...) is replaced whole.
    Keys, numbers, booleans and None are kept as they are.
    """
    return _redact_obj(obj, _gate_literals(_literals(extra_values)))


@functools.lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    return _SECRET_KEY.search(key) is not None


_SCALARS = frozenset({int, float, bool, type(None)})


def _redact_obj(obj: Any, literals: Gated) -> Any:
    kind = type(obj)  # exact types first: an event payload is thousands of these a second
    if kind is str:
        return _redact_text(obj, literals)
    if kind in _SCALARS:  # before the Mapping check, an ABC check that costs more than the rest
        return obj
    if kind is dict or isinstance(obj, Mapping):
        return _redact_into({}, obj, literals)
    if kind is list or kind is tuple or isinstance(obj, list | tuple):
        items = [_redact_obj(item, literals) for item in obj]
        return items if isinstance(obj, list) else tuple(items)
    if isinstance(obj, str):  # a str subclass
        return _redact_text(obj, literals)
    return obj


def _redact_into(out: dict[Any, Any], obj: Mapping[Any, Any], literals: Gated) -> dict[Any, Any]:
    """`out` with the redacted items of `obj` added: an event's fields go straight into the event (no copy)."""
    for key, value in obj.items():
        if type(value) is str:  # most values: straight to the text's redaction
            secret = value and isinstance(key, str) and _secret_key(key)
            out[key] = REDACTED if secret else _redact_text(value, literals)
        else:
            out[key] = (REDACTED if isinstance(value, str) and value and isinstance(key, str) and _secret_key(key)
                        else _redact_obj(value, literals))
    return out


# An environment value that could be a credential: one word (no blank) of this many characters or more, not a
# path. Words of 8+ characters rarely sit in a packet by chance; when one does, the cost is a parse cache miss.
_CREDENTIAL_LIKE = re.compile(r"[^\s/~.][^\s]{7,}")


def credential_like(value: str) -> bool:
    return _CREDENTIAL_LIKE.fullmatch(value) is not None


# A variable whose name says it holds a secret: `AWP_PG_PASSWORD`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`.
def secret_named_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the runner's secret-named variables (`secret_named`) that could be credentials
    (`credential_like`): what a check, or an agent outside the sandbox, could read from AWP's environment and
    print or write into its work."""
    env = os.environ if environ is None else environ
    return tuple(value for name, value in env.items() if secret_named(name) and credential_like(value))


class _Spec(Protocol):
    @property
    def credential_env(self) -> str | None: ...


class _Catalog(Protocol):
    """What the redactor reads of a Catalog (no import: the catalog module sits above this one)."""

    @property
    def providers(self) -> Mapping[str, _Spec]: ...

    @property
    def accounts(self) -> Mapping[str, _Spec]: ...


@dataclass(frozen=True)
class Redactor:
    """The one redactor at the boundary: every secret pattern, and every literal credential value it was given.

    Build it with `for_catalog` at run time so it knows the value of every account's `credential_env` (not just
    the account in use: a fallback, an agent or a verifier may print another one), then pass everything that
    leaves an Attempt through it: commit messages, verifier items, failure messages, metadata, log lines and
    asset descriptions.
    """

    literals: tuple[str, ...] = field(default=())
    _gated: Gated = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "literals", tuple(_literals(self.literals)))
        object.__setattr__(self, "_gated", _gate_literals(self.literals))

    @classmethod
    def for_catalog(cls, catalog: _Catalog | None, environ: Mapping[str, str] | None = None,
                    extra: Iterable[str] = ()) -> Redactor:
        """Patterns plus the current values of every credential variable the catalog names (accounts and
        providers), read from `environ` (default: this process's environment) when it is called."""
        env = os.environ if environ is None else environ
        names = set()
        if catalog is not None:
            specs = [*catalog.accounts.values(), *catalog.providers.values()]
            names = {spec.credential_env for spec in specs if spec.credential_env}
        return cls((*(env[name] for name in sorted(names) if env.get(name)), *extra))

    @classmethod
    def for_environment(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """Patterns plus every value of `environ` (default: this process's) that could be a credential, whatever
        its variable is called (`credential_like`): for what knows no catalog, such as the parse cache."""
        env = os.environ if environ is None else environ
        return cls(tuple(value for value in env.values() if credential_like(value)))

    def with_runner_secrets(self, environ: Mapping[str, str] | None = None) -> Redactor:
        """Also every value of the runner's secret-named variables (`secret_named_values`: a database password,
        a cloud key): what a check or an agent run beside the runner could print."""
        return self.with_values(secret_named_values(environ))

    def holds_secret(self, text: str) -> bool:
        """Whether redaction would change `text`: it holds a pattern secret or one of the literals."""
        return self(text) != text

    def with_values(self, values: Iterable[str]) -> Redactor:
        return Redactor((*self.literals, *values))

    def __call__(self, text: str) -> str:
        return _redact_text(text, self._gated)

    def obj(self, obj: Any) -> Any:
        """A redacted copy of str / dict / list / tuple data (metadata, check evaluations, event payloads)."""
        return _redact_obj(obj, self._gated)

    def into(self, out: dict[Any, Any], mapping: Mapping[Any, Any]) -> dict[Any, Any]:
        """`out` with the redacted items of `mapping` added, as `out.update(self.obj(mapping))` would."""
        return _redact_into(out, mapping, self._gated)

    def model(self, model: M) -> M:
        """A redacted copy of a pydantic model (an AttemptRecord, a VerifierReport, a FailureEnvelope)."""
        return type(model).model_validate(self.obj(model.model_dump(mode="python")))


# An environment variable whose name says it holds a secret: its last word is one of these (`AWP_PG_PASSWORD`,
# `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `SENTRY_DSN`), or it is a connection URL with a password in it.
_SECRET_VARIABLE = re.compile(r"(?i)(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PAT|CREDENTIALS?|DSN|COOKIE)S?$"
                              r"|^DATABASE_URL$")


def secret_named(name: str) -> bool:
    return _SECRET_VARIABLE.search(name) is not None


def find_secrets(text: str) -> list[tuple[int, str]]:
    """(line, kind) of every secret-looking string in `text`, for the linter. Never the value itself.

    A span claimed by a more specific kind (e.g. `openai_key` in `OPENAI_API_KEY=sk-...`) is reported once.
    """
    claimed: list[tuple[int, int]] = []
    found: set[tuple[int, str]] = set()
    for kind, pattern in SECRET_PATTERNS.items():
        for match in pattern.finditer(text):
            start, end = _secret_span(match)
            if any(start < c_end and c_start < end for c_start, c_end in claimed):
                continue
            claimed.append((start, end))
            found.add((text.count("\n", 0, start) + 1, kind))
    return sorted(found)
