"""Failure classes from what providers say: HTTP statuses, error texts and reset times. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from awp_pipelines.core.records.failures import REFUSAL_CLASSES, FailureClass, FailureEnvelope

DAY_MS = 24 * 3600 * 1000

# The wordings of each supported CLI, as the real CLIs print them against the local fake APIs (tests/providers/
# test_real_refusals.py) and as shared/reference/agent-clis.md records them; docs/providers-and-agents.md has the
# table. Unknown model: Anthropic's 404 `not_found_error` "model: X", Claude Code's "There's an issue with the
# selected model (X). It may not exist…", Codex's "The model `X` does not exist…", OpenCode's
# `ProviderModelNotFoundError`, Gemini's "models/X is not found for API version…".
# (Codex's warning "Model metadata for `X` not found. Defaulting…" is none.)
_UNKNOWN_MODEL = (r"issue with the selected model|\bmodel\b(?! metadata).{0,60}(not found|does not exist|not supported|"
                  r"not available|unknown|invalid|may not exist)|models/\S+ is not found|(unknown|invalid|"
                  r"unsupported) model|not a valid model|model_not_found|ProviderModelNotFound|"
                  r"^\W*model: \S+\W*$|not_found_error")
# Not logged in: Claude Code's "Not logged in · Please run /login" and "Invalid API key · Please run /login",
# Codex's "Missing environment variable: `OPENAI_API_KEY`", OpenCode's `ProviderAuthError`, Gemini's "Please
# set an Auth method in your …/settings.json" or "Invalid auth method selected." (its exit 41).
_NO_LOGIN = (r"not logged in|invalid.{0,12}(api.?key|x-api-key)|missing environment variable: `?\w*(KEY|TOKEN)|"
             r"ProviderAuthError|auth method")
_TEXT_CLASSES: tuple[tuple[FailureClass, re.Pattern[str]], ...] = (
    ("provider_rate_limit", re.compile(
        r"(?i)rate.?limit|usage limit|limit reached|hit your (usage )?limit|quota|too many requests|\b429\b|"
        r"resource.?exhausted|billing|credit balance|insufficient.?(funds|credits)|\b402\b")),
    ("provider_auth_claim", re.compile(
        r"(?i)\b40[13]\b|unauthori[sz]ed|authentication|invalid.{0,12}(api.?key|x-api-key|token)|"
        r"please (log|sign) ?in|/login|auth method|forbidden|" + _NO_LOGIN, re.MULTILINE)),
    ("provider_capacity", re.compile(r"(?i)overloaded|\b5(00|02|03|04|29)\b|capacity|unavailable|server.?error|"
                                     r"high demand")),
    ("provider_config_claim", re.compile(
        r"(?i)" + _UNKNOWN_MODEL + r"|invalid.?request|\b40[04]\b|\b422\b|unknown (option|argument)|"
        r"cannot be used with root", re.MULTILINE)),
    ("transport_disconnect", re.compile(
        r"(?i)econn(refused|reset)|connection (refused|reset|error|closed)|network|socket hang up|"
        r"stream disconnected|fetch failed|timed? ?out|unable to connect|dns")),
)
# A CLI refusing its own arguments or settings before it sends any request: no retry changes that.
# Claude Code's "error: unknown option '--x'", Codex's "error: unexpected argument '--x' found", Gemini's
# "Unknown arguments: x", OpenCode's help alone on stderr ("opencode run [message..]", exit 1).
_LOCAL_REFUSAL = re.compile(r"(?i)cannot be used with root|unknown (option|argument)|invalid (option|argument)|"
                            r"unrecognized (option|argument)|unexpected argument|^opencode run \[message\.\.\]",
                            re.MULTILINE)
# Refusals a provider gives before any work that no retry changes (the same inputs, the same answer): the
# pattern, and the fix the failure's message carries. An auth or config claim only: a transport or capacity
# text that mentions a model is not one. (A CLI refusing its own flags: _LOCAL_REFUSAL, in exit_failure.)
_REPEATS_IDENTICALLY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)" + _NO_LOGIN),
     "the agent CLI has no login: give the provider or account a credential_env whose variable is set in AWP's "
     "environment, or a config_dir the CLI is logged in under (`awp plan` shows which layer set each field, "
     "`awp doctor` checks the login)"),
    (re.compile(r"(?i)" + _UNKNOWN_MODEL, re.MULTILINE),
     "the provider does not serve this model: pick one it serves (`awp doctor` lists them) or a fallback target"),
)
_BILLING = re.compile(r"(?i)billing|credit balance|insufficient.?(funds|credits)|\b402\b")

_LOGIN_FIX, _MODEL_FIX = (fix for _, fix in _REPEATS_IDENTICALLY)
# Each CLI's structured errors: the name, type or code its adapter reads from the event (not the text, whose
# wording changes between releases), with their class, and for those that say the same on every try the fix.
#   Claude Code's assistant `error`; the Anthropic and OpenAI APIs' error types and codes (in the bodies the CLIs
#   pass on); OpenCode's `error.name` (its NamedErrors) and the AI SDK's errors it logs; Gemini CLI's error classes
#   (`ModelNotFoundError` and the others on stderr, its result's `error.type`); Amp's `error` (amp.py).
STRUCTURED_ERRORS: dict[str, tuple[FailureClass, str | None]] = {
    # not logged in, a key the provider refuses: the same on every try
    "authentication_failed": ("provider_auth_claim", _LOGIN_FIX),
    "authentication_error": ("provider_auth_claim", _LOGIN_FIX),
    "invalid_api_key": ("provider_auth_claim", _LOGIN_FIX),
    "ProviderAuthError": ("provider_auth_claim", _LOGIN_FIX),
    "LoadAPIKeyError": ("provider_auth_claim", _LOGIN_FIX),
    "AI_LoadAPIKeyError": ("provider_auth_claim", _LOGIN_FIX),
    "FatalAuthenticationError": ("provider_auth_claim", _LOGIN_FIX),
    "UnauthorizedError": ("provider_auth_claim", _LOGIN_FIX),
    "permission_error": ("provider_auth_claim", None),
    "ForbiddenError": ("provider_auth_claim", None),
    "ValidationRequiredError": ("provider_auth_claim", None),
    # a model the provider does not serve: the same on every try
    "model_not_found": ("provider_config_claim", _MODEL_FIX),
    "not_found_error": ("provider_config_claim", _MODEL_FIX),
    "ProviderModelNotFoundError": ("provider_config_claim", _MODEL_FIX),
    "ModelNotFoundError": ("provider_config_claim", _MODEL_FIX),
    # a request the provider refuses as written
    "invalid_request": ("provider_config_claim", None),
    "invalid_request_error": ("provider_config_claim", None),
    "BadRequestError": ("provider_config_claim", None),
    "FatalConfigError": ("provider_config_claim", None),
    "ProviderInitError": ("provider_config_claim", None),
    # limits and quotas: the account rests, the chain moves on
    "rate_limit": ("provider_rate_limit", None),
    "rate_limit_error": ("provider_rate_limit", None),
    "billing_error": ("provider_rate_limit", None),
    "insufficient_quota": ("provider_rate_limit", None),
    "TerminalQuotaError": ("provider_rate_limit", None),
    "RetryableQuotaError": ("provider_rate_limit", None),
    "TooManyRequestsError": ("provider_rate_limit", None),
    # an outage: another target may serve, this one again after a pause
    "server_error": ("provider_capacity", None),
    "overloaded_error": ("provider_capacity", None),
    "api_error": ("provider_capacity", None),
    "InternalServerError": ("provider_capacity", None),
}


_EMBEDDED_NAME = re.compile(r'"(?:type|code)"\s*:\s*"(\w+)"')
_LEADING_NAME = re.compile(r"^\W*(\w*Error)\b:")
_API_TYPE = re.compile(r"\b([a-z]+(?:_[a-z]+)*_error)\b")


def error_name(text: str) -> str | None:
    """The structured error a CLI's text carries: an API body it passes on (`{"type":"not_found_error"...}`,
    `"code":"model_not_found"`) or a JavaScript error's name leading a line (`AI_LoadAPIKeyError: …`); None."""
    names = [m for m in _EMBEDDED_NAME.findall(text or "") if m in STRUCTURED_ERRORS]
    if names:
        return names[-1]  # the innermost: `{"type":"error","error":{"type":"not_found_error"}}`
    match = _LEADING_NAME.match(text or "")
    if match and match.group(1) in STRUCTURED_ERRORS:
        return match.group(1)
    # An API's error type quoted bare behind a generic one: "AI_APICallError: … authentication_error"
    bare = next((m for m in _API_TYPE.findall(text or "") if m in STRUCTURED_ERRORS), None)
    return bare or (match.group(1) if match else None)


# The API's own name for an HTTP status whose refusal repeats identically (a key refused, a model or endpoint it does
# not have): what a structured status stands for where a CLI gives no name (Codex's "unexpected status 404").
_STATUS_NAMES = {401: "authentication_error", 404: "not_found_error"}
_STATUS_IN_TEXT = re.compile(r"\bunexpected status (\d{3})\b")


def status_name(status: object) -> str | None:
    """The structured error an HTTP status stands for, where it says the same on every try; None otherwise."""
    return _STATUS_NAMES.get(status) if isinstance(status, int) else None


def status_in_text(text: str) -> int | None:
    """The HTTP status a CLI states in its own words (Codex: "unexpected status 401 Unauthorized: …")."""
    match = _STATUS_IN_TEXT.search(text or "")
    return int(match.group(1)) if match else None


def class_of_error(name: object, status: object = None, text: str = "",
                   default: FailureClass = "provider_runtime_claim") -> FailureClass:
    """A CLI's structured error: by its name (STRUCTURED_ERRORS) first, then by an HTTP status, then by its text."""
    known = STRUCTURED_ERRORS.get(str(name)) if name else None
    if known is not None:
        return known[0]
    if isinstance(status, int) and not isinstance(status, bool):
        return class_of_status(status)
    return class_of_text(text, default)


def class_of_status(status: int | None) -> FailureClass:
    if status is None:
        return "transport_disconnect"
    if status in (429, 402):
        return "provider_rate_limit"
    if status in (401, 403):
        return "provider_auth_claim"
    if status in (500, 502, 503, 504, 529) or status >= 500:
        return "provider_capacity"
    if 400 <= status < 500:
        return "provider_config_claim"
    return "provider_runtime_claim"


def class_of_text(text: str, default: FailureClass = "provider_runtime_claim") -> FailureClass:
    for cls, pattern in _TEXT_CLASSES:
        if pattern.search(text or ""):
            return cls
    return default


def local_refusal(text: str) -> bool:
    """The CLI refused its own configuration (a flag, a permission mode as root): deterministic."""
    return bool(_LOCAL_REFUSAL.search(text or ""))


def repeat_fix(cls: FailureClass, text: str, code: str | None = None) -> str | None:
    """The fix for an auth or config refusal that would repeat identically on every try, by its structured error
    (`code`: the name the adapter read, e.g. `ProviderAuthError`, `ModelNotFoundError:404`) or its text; None for
    any other."""
    if cls not in REFUSAL_CLASSES:
        return None
    known = STRUCTURED_ERRORS.get((code or "").split(":")[0])
    if known is not None and known[0] == cls and known[1] is not None:
        return known[1]
    return next((fix for pattern, fix in _REPEATS_IDENTICALLY if pattern.search(text or "")), None)


def _ms_until(when: datetime, now: datetime) -> int:
    return max(0, int((when - now).total_seconds() * 1000))


def epoch_delay_ms(epoch: float | int | str | None, now: datetime) -> int | None:
    """Milliseconds until an epoch (seconds, or milliseconds when it is that large)."""
    if epoch is None:
        return None
    try:
        value = float(epoch)
    except (TypeError, ValueError):
        return None
    if value > 1e12:
        value /= 1000
    return _ms_until(datetime.fromtimestamp(value, UTC), now)


def retry_after_ms(header: str | None, now: datetime) -> int | None:
    """HTTP Retry-After: delta seconds or an HTTP date."""
    if not header:
        return None
    header = header.strip()
    if re.fullmatch(r"\d+(\.\d+)?", header):
        return int(float(header) * 1000)
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _ms_until(when, now)


_EPOCH_IN_TEXT = re.compile(r"\|\s*(\d{10,13})\b")
_IN_DURATION = re.compile(r"(?i)(?:try again|retry|resets?) in\s+((?:\d+\s*(?:days?|hours?|hrs?|minutes?|mins?|"
                          r"seconds?|secs?|d|h|m|s)\b[\s,]*(?:and\s+)?)+)")
_DURATION_PART = re.compile(r"(?i)(\d+)\s*(d|h|m|s)")
_CLOCK = re.compile(r"(?i)(?:resets?(?: at)?|try again at)\s+(?:(\d{4}-\d{2}-\d{2})[ T])?"
                    r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?")
_UNIT_MS = {"d": DAY_MS, "h": 3_600_000, "m": 60_000, "s": 1000}


def reset_delay_ms(text: str, now: datetime) -> int | None:
    """When a limit resets, from the provider's text: `...|<epoch>`, `try again in 2h 5m`,
    `resets 7pm`, `Try again at 3:45 PM`, `try again at 2026-12-01 10:00` (times read as UTC)."""
    if not text:
        return None
    match = _EPOCH_IN_TEXT.search(text)
    if match:
        return epoch_delay_ms(match.group(1), now)
    match = _IN_DURATION.search(text)
    if match:
        return sum(int(n) * _UNIT_MS[u[0].lower()] for n, u in _DURATION_PART.findall(match.group(1))) or None
    match = _CLOCK.search(text)
    if match:
        day, hour, minute, half = match.groups()
        hour = int(hour)
        if half:
            hour = hour % 12 + (12 if half.lower() == "pm" else 0)
        if hour > 23:
            return None
        base = datetime.fromisoformat(day).replace(tzinfo=UTC) if day else now
        when = base.replace(hour=hour, minute=int(minute or 0), second=0, microsecond=0)
        if not day and when <= now:
            when += timedelta(days=1)
        return _ms_until(when, now)
    return None


def envelope(cls: FailureClass, message: str, *, code: str | None = None, delay_ms: int | None = None,
             now: datetime | None = None, deterministic: bool = False, name: str | None = None) -> FailureEnvelope:
    """The envelope for `cls`; a rate limit without a stated reset reads one from the text, a billing
    refusal rests the account for a day; a refusal that repeats identically (not logged in, an unknown model,
    a bad flag: by its structured error `code`, or its text) is deterministic, its fix in the message: no
    retry, no repair (the policy may fall back). `name`: the structured error, where `code` is not it."""
    fix = repeat_fix(cls, message, name or code)
    if fix is not None:
        deterministic = True
        message = f"{message} (not retried: {fix})"
    if delay_ms is None and cls == "provider_rate_limit":
        delay_ms = reset_delay_ms(message, now or datetime.now(UTC))
        if delay_ms is None and _BILLING.search(message):
            delay_ms = DAY_MS
    return FailureEnvelope.for_class(cls, message, provider_code=code, suggested_delay_ms=delay_ms,
                                     deterministic=deterministic)
