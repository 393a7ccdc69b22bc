"""Counted nouns in what people read: "1 line", "2 lines" (never "1 lines")."""

from __future__ import annotations


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`n` and the noun, singular for exactly one; `plural` for an irregular one (default: word + "s")."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"
