"""Every time bound of an Attempt comes from the single `timeout` key (Prompt Runner's Session rule)."""

from __future__ import annotations

import re
from decimal import Decimal

from pydantic import BaseModel, Field

SEVEN_DAYS_MS = 7 * 24 * 60 * 60 * 1000
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
UNBOUNDED = ("unbounded", "infinity", "inf", "none")
# Above seven days a timeout is clamped; a number beyond ~3,000 years is no duration anyone meant (and a float
# of 400 digits is infinite, which no int holds): an error where it is written, not an OverflowError later.
MAX_WRITTEN_MS = 10**14


class Bounds(BaseModel):
    """Derived bounds, all in milliseconds."""

    timeout_ms: int = Field(description="The resolved `timeout`; unset means seven days.")
    transport_timeout_ms: int = Field(description="Transport timeout = timeout.")
    stream_timeout_ms: int = Field(description="Stream timeout = timeout.")
    idle_timeout_ms: int = Field(description="Stream idle bound (no event for this long ends the session) = "
                                 "max(120 s, timeout + 30 s).")
    run_deadline_ms: int = Field(description="The Attempt's hard deadline = timeout, across its session and "
                                 "every resume (never re-arms).")
    source: str = Field(description="Why: 'default (unset)', 'unbounded', 'clamped to 7 days' or 'timeout'.")

    def describe(self) -> str:
        """What `awp plan` prints: the bounds the runner enforces, from these very fields."""
        return (f"{human_duration(self.timeout_ms)} ({self.source}): the Attempt's deadline "
                f"{human_duration(self.run_deadline_ms)}, its resumes included; "
                f"idle {human_duration(self.idle_timeout_ms)} (no event for that long ends a session)")


def parse_timeout_ms(value: int | str | None) -> tuple[int, str]:
    """Returns (milliseconds, reason). Raises ValueError for text that is no duration."""
    if value is None:
        return SEVEN_DAYS_MS, "default (unset)"
    if isinstance(value, str) and value.strip().lower() in UNBOUNDED:
        return SEVEN_DAYS_MS, "unbounded"
    shown = repr(value) if len(str(value)) <= 40 else repr(str(value)[:40]) + "…"
    if isinstance(value, int):
        number = Decimal(value)
    else:
        match = _DURATION.match(value)
        if not match:
            raise ValueError(f"timeout {shown} is not a duration; use milliseconds, '45m', '2h', '1d' "
                             "or 'unbounded'")
        # Decimal, not float: 400 digits are a large number, not infinity.
        number = Decimal(match.group(1)) * _UNITS_MS[match.group(2) or "ms"]
    if number > MAX_WRITTEN_MS:
        raise ValueError(f"timeout {shown} is too large to be a duration; at most 7 days apply anyway: "
                         "write '7d' or 'unbounded'")
    ms = int(number)
    if ms <= 0:
        raise ValueError("timeout must be positive")
    if ms > SEVEN_DAYS_MS:
        return SEVEN_DAYS_MS, "clamped to 7 days"
    return ms, "timeout"


def derive_bounds(value: int | str | None) -> Bounds:
    ms, source = parse_timeout_ms(value)
    return Bounds(timeout_ms=ms, transport_timeout_ms=ms, stream_timeout_ms=ms,
                  idle_timeout_ms=stream_idle_ms(ms), run_deadline_ms=ms, source=source)


def human_duration(ms: int) -> str:
    """604800000 → '7d', 600000 → '10m', 90000 → '1m30s'."""
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size:
            parts.append(f"{ms // size}{unit}")
            ms %= size
    return "".join(parts) or f"{ms}ms"


def stream_idle_ms(timeout_ms: int) -> int:
    """No event for this long ends a session: max(120 s, timeout + 30 s), as Prompt Runner derives it. An agent
    quiet through a long build is never killed for its silence before the Attempt's deadline."""
    return max(120_000, timeout_ms + 30_000)

