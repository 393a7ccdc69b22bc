"""Hostile YAML ends in a PacketError that names file, line and key, never in a PyYAML/Python exception."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

from awp_pipelines.core.packet.bounds import SEVEN_DAYS_MS, parse_timeout_ms
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.yamlsrc import MAX_DEPTH, YamlDoc, parse_yaml, split_front_matter

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


def test_libyaml_and_the_pure_loader_read_every_packet_file_alike() -> None:
    """The fast path (libyaml's parser, our composer) gives the same data and key lines as the pure loader, and
    accepts nothing the pure loader refuses (the repo's packets, the malformed ones included)."""
    from awp_pipelines.core.packet import yamlsrc

    def indexed(file: Path, parsed: tuple[object, object]) -> tuple[object, ...]:
        doc = YamlDoc(file, parsed[1])
        try:
            if parsed[0] is not None:
                yamlsrc._Indexer(doc).walk(parsed[0], ())  # type: ignore[arg-type]
        except PacketError as err:
            return ("refused", str(err))
        return (doc.data, doc.lines)

    root = REPO_ROOT
    files = [p for p in root.rglob("*") if ".venv" not in p.parts
             and (p.name.endswith(".prompt.md") or p.suffix == ".yaml")]
    compared = 0
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace")
        if file.suffix == ".md":
            if not text.startswith("---\n") or "\n---\n" not in text[4:]:
                continue
            text = text[4:text.index("\n---\n", 4) + 1]
        fast = yamlsrc._compose_fast(text)
        try:
            pure = yamlsrc._compose_pure(text, file, 0)
        except PacketError:
            assert fast is None, file  # what the pure loader refuses, the fast one does not accept
            continue
        assert fast is not None, file
        assert indexed(file, fast) == indexed(file, pure), file
        compared += 1
    assert compared > 40
