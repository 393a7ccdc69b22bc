"""Hostile YAML ends in a PacketError that names file, line and key, never in a PyYAML/Python exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from awp_pipelines.bounds import SEVEN_DAYS_MS, parse_timeout_ms
from awp_pipelines.errors import PacketError
from awp_pipelines.yamlsrc import MAX_DEPTH, parse_yaml, split_front_matter

FILE = Path("packet.yaml")


def error_of(text: str) -> PacketError:
    with pytest.raises(PacketError) as caught:
        parse_yaml(text, FILE)
    return caught.value


def test_a_control_character_is_an_error_at_its_line_and_key() -> None:
    err = error_of("name: ok\nrepos:\n  app: \x01x\n")
    assert (err.line, err.key) == (3, "repos.app")
    assert "U+0001" in err.message


def test_a_nul_in_front_matter_counts_lines_from_the_file_start() -> None:
    with pytest.raises(PacketError) as caught:
        split_front_matter("---\nid: 1\nname: a\x00b\n---\nbody\n", FILE)
    assert (caught.value.line, caught.value.key) == (3, "name")


def test_an_escaped_nul_in_a_key_or_value_is_refused() -> None:
    assert error_of('a:\n  b: "x\\0y"\n').key == "a.b"
    assert "NUL" in error_of('"k\\0": 1\n').message


def test_nesting_deeper_than_the_bound_is_an_error_not_a_recursion_error() -> None:
    err = error_of("x: " + "[" * 3000 + "]" * 3000 + "\n")
    assert (err.line, err.key) == (1, "x")
    assert f"more than {MAX_DEPTH}" in err.message


def test_nesting_within_the_bound_loads() -> None:
    depth = MAX_DEPTH - 2
    assert parse_yaml("x: " + "[" * depth + "]" * depth + "\n", FILE).data["x"]


def test_exponential_aliases_are_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    assert "values" in error_of("\n".join(lines) + "\n").message


def test_a_recursive_alias_is_refused() -> None:
    assert "levels" in error_of("a: &a [*a]\n").message


@pytest.mark.parametrize("value", ["9" * 400 + "d", "9" * 400, 10**400, "1" + "0" * 20 + ".5h"])
def test_an_absurd_timeout_is_a_value_error_not_an_overflow(value: int | str) -> None:
    with pytest.raises(ValueError, match="too large"):
        parse_timeout_ms(value)


def test_a_long_but_sane_timeout_is_still_clamped_to_seven_days() -> None:
    assert parse_timeout_ms("3650d") == (SEVEN_DAYS_MS, "clamped to 7 days")
