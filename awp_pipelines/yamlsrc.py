"""YAML with line numbers: front matter splitting and a key-path → line map for error messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.errors import PacketError

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


def parse_yaml(text: str, file: Path, line_offset: int = 0) -> YamlDoc:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 + line_offset if mark else None
        raise PacketError(file, f"invalid YAML: {err.problem or err}", line=line,
                          key=key_near(text, mark.line + 1) if mark else None,
                          hint="check indentation and quoting") from None
    except yaml.YAMLError as err:
        raise PacketError(file, f"invalid YAML: {err}") from None
    finally:
        loader.dispose()
    doc = YamlDoc(file=file, data=data, line_offset=line_offset)
    if node is not None:
        _index(node, (), doc)
    return doc


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


def _index(node: yaml.Node, path: KeyPath, doc: YamlDoc) -> None:
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise PacketError(doc.file, f"duplicate key '{key}'", key=".".join((*path, key)),
                                  line=key_node.start_mark.line + 1 + doc.line_offset,
                                  hint="YAML keeps only the last one; remove one of them")
            seen.add(key)
            _index(value_node, (*path, key), doc)
            doc.lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index(item, (*path, str(index)), doc)


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
                raise PacketError(file, "front matter must be a YAML mapping of keys", line=2)
            return FrontMatter(doc, "".join(lines[index + 1 :]), index + 2)
    raise PacketError(file, "front matter is not closed", line=1, hint="add a '---' line after the YAML keys")
