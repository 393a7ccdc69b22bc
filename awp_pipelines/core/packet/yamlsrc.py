"""YAML with line numbers: front matter splitting and a key-path → line map for error messages."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.core.packet import parse_cache
from awp_pipelines.core.packet.errors import PacketError

KeyPath = tuple[str, ...]


@dataclass
class YamlDoc:
    """Parsed YAML plus where each key path sits in the source file (1-based lines)."""

    file: Path
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    line_offset: int = 0

    def line_of(self, path: tuple[Any, ...]) -> int | None:
        """Line of the longest known prefix of `path` (pydantic locs may name union members)."""
        parts = tuple(str(p) for p in path)
        while parts:
            if parts in self.lines:
                return self.lines[parts] + self.line_offset
            parts = parts[:-1]
        return self.lines.get((), 0) + self.line_offset or None


@dataclass
class FrontMatter:
    doc: YamlDoc
    body: str
    body_line: int


# Packet files nest a few levels; deeper input is hostile or broken, and PyYAML's composer (like every walk
# after it) recurses once per level, so 3,000 brackets would end in a RecursionError.
MAX_DEPTH = 64
# Aliases make a YAML graph, not a tree: `&a [*a, *a]` chains expand exponentially in every later walk.
MAX_NODES = 50_000


class _TooDeep(yaml.MarkedYAMLError):
    pass


class _DepthGuard(yaml.composer.Composer):
    """Refuses nesting deeper than MAX_DEPTH while composing, before anything recurses."""

    _depth = 0
    peek_event: Callable[[], Any]  # the parser's (pure Python or libyaml)

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _TooDeep(None, None, f"nested more than {MAX_DEPTH} levels deep", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _BoundedLoader(_DepthGuard, yaml.SafeLoader):
    """SafeLoader (pure Python) with the depth guard: it gives every error its message and line."""

    def fetch_flow_collection_start(self, token_class: type) -> None:
        # The scanner looks ahead over a whole flow collection at a cost that grows with the square of its
        # depth: refuse `[[[[…` as it is read, not after thousands of levels.
        if self.flow_level >= MAX_DEPTH:
            raise _TooDeep(None, None, f"nested more than {MAX_DEPTH} levels deep", self.get_mark())
        super().fetch_flow_collection_start(token_class)


_CParser: Any = getattr(getattr(yaml, "_yaml", None), "CParser", None)  # libyaml's, when PyYAML has it

if _CParser is not None:
    class _FastLoader(_DepthGuard, _CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """libyaml scans and parses (linear, about 5x faster: 2,200 packet files are most of a code location's
        YAML time); the composer is still ours, with the depth guard. A document it refuses is parsed again
        by _BoundedLoader, so errors read the same either way."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            yaml.composer.Composer.__init__(self)


def _compose_fast(text: str) -> tuple[yaml.Node | None, Any] | None:
    """(node, data) by libyaml, or None: no libyaml, or the text has an error (the pure loader says which)."""
    if _CParser is None:
        return None
    loader = _FastLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except (yaml.YAMLError, ValueError, TypeError):  # any refusal: the pure loader reports it
        return None
    finally:
        loader.dispose()


def parse_yaml(text: str, file: Path, line_offset: int = 0) -> YamlDoc:
    cache = parse_cache.current()  # set while a packet loads (parse_cache.py)
    hit = cache.get(text, line_offset) if cache is not None else None
    if hit is not None:
        return YamlDoc(file=file, data=hit[0], lines=hit[1], line_offset=line_offset)
    fast = _compose_fast(text)
    node, data = fast if fast is not None else _compose_pure(text, file, line_offset)
    doc = YamlDoc(file=file, data=data, line_offset=line_offset)
    if node is not None:
        _Indexer(doc).walk(node, ())
    if cache is not None:
        cache.put(text, line_offset, doc.data, doc.lines)
    return doc


def _compose_pure(text: str, file: Path, line_offset: int) -> tuple[yaml.Node | None, Any]:
    try:
        loader = _BoundedLoader(text)
    except yaml.reader.ReaderError as err:
        # A control character (NUL, ...) anywhere in the text: PyYAML refuses it before parsing starts.
        line = text.count("\n", 0, err.position) + 1
        raise PacketError(file, f"invalid YAML: control character {_codepoint(err.character)} is not allowed",
                          line=line + line_offset, key=key_near(text, line),
                          hint="remove it; write it escaped in a double-quoted string if it is meant") from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        at = mark.line + 1 + line_offset if mark else None
        raise PacketError(file, f"invalid YAML: {err.problem or err}", line=at,
                          key=key_near(text, mark.line + 1) if mark else None,
                          hint="flatten it" if isinstance(err, _TooDeep) else "check indentation and quoting"
                          ) from None
    except yaml.YAMLError as err:
        raise PacketError(file, f"invalid YAML: {err}") from None
    finally:
        loader.dispose()
    return node, data


def _codepoint(character: int | str) -> str:
    # PyYAML's ReaderError carries the code point as an int for text input.
    code = character if isinstance(character, int) else ord(character[:1] or "\0")
    return f"U+{code:04X}"


_KEY_LINE = re.compile(r"^( *(?:- +)?)([\"']?)([^\"'#:\s][^\"'#:]*?)\2\s*:(?:\s|$)")


def key_near(text: str, line: int) -> str | None:
    """The dotted key written at or above `line` (1-based), judged by indentation: where a YAML error is."""
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines()[:line]:
        match = _KEY_LINE.match(raw)
        if not match:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(3).strip()))
    return ".".join(key for _, key in stack) or None


class _Indexer:
    """Records each key path's line; refuses duplicate keys, NUL characters and alias bombs, with their line."""

    def __init__(self, doc: YamlDoc) -> None:
        self.doc = doc
        self.visited = 0

    def fail(self, node: yaml.Node, path: KeyPath, message: str, hint: str) -> PacketError:
        return PacketError(self.doc.file, message, key=".".join(path) or None,
                           line=node.start_mark.line + 1 + self.doc.line_offset, hint=hint)

    def walk(self, node: yaml.Node, path: KeyPath) -> None:
        self.visited += 1
        # Depth is bounded by the loader; a recursive alias (`&a [*a]`) is caught here by the same bound.
        if self.visited > MAX_NODES or len(path) > MAX_DEPTH:
            raise self.fail(node, path, f"more than {MAX_NODES} values or {MAX_DEPTH} levels (recursive or "
                            "exponential aliases?)", "write the values out; packets need no deep aliases")
        self.doc.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode) and "\0" in node.value:
            # A path with NUL makes every os call raise; no packet value needs one.
            raise self.fail(node, path, "NUL character (\\0) in a value", "remove the \\0 escape")
        if isinstance(node, yaml.MappingNode):
            self._mapping(node, path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, (*path, str(index)))

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> None:
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if "\0" in key:
                raise self.fail(key_node, path, "NUL character (\\0) in a key", "remove the \\0 escape")
            if key in seen:
                raise self.fail(key_node, (*path, key), f"duplicate key '{key}'",
                                "YAML keeps only the last one; remove one of them")
            seen.add(key)
            self.walk(value_node, (*path, key))
            self.doc.lines[(*path, key)] = key_node.start_mark.line + 1


def split_front_matter(text: str, file: Path, required: bool = True) -> FrontMatter:
    """Split `---\\nYAML\\n---\\nbody`. Only the body is ever sent to an agent."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        if required:
            raise PacketError(file, "missing YAML front matter", line=1,
                              hint="start the file with a '---' line, the YAML keys, then a closing '---'")
        return FrontMatter(YamlDoc(file, {}), text, 1)
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            doc = parse_yaml("".join(lines[1:index]), file, line_offset=1)
            if doc.data is None:
                doc.data = {}
            if not isinstance(doc.data, dict):
                raise PacketError(file, "front matter must be a YAML mapping of keys", line=2,
                                  hint="write one `key: value` per line between the two `---` lines")
            return FrontMatter(doc, "".join(lines[index + 1 :]), index + 2)
    raise PacketError(file, "front matter is not closed", line=1, hint="add a '---' line after the YAML keys")
