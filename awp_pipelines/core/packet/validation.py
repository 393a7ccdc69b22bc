"""Turn a pydantic ValidationError into one PacketError: file, line, key, what is wrong, allowed values."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.yamlsrc import YamlDoc

M = TypeVar("M", bound=BaseModel)


def validate_doc(model: type[M], doc: YamlDoc, data: Any = None) -> M:
    try:
        return model.model_validate(doc.data if data is None else data)
    except ValidationError as err:
        raise to_packet_error(err, model, doc) from None


def to_packet_error(err: ValidationError, model: type[BaseModel], doc: YamlDoc) -> PacketError:
    errors = err.errors()
    first = _most_specific(errors)
    loc = _data_path(first["loc"], doc.data)
    line = doc.line_of(loc)
    if first["type"] == "missing":
        loc = (*loc, first["loc"][-1])
    key = ".".join(str(p) for p in loc) or None
    if first["type"] == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        if close:
            return PacketError(doc.file, "unknown key", key=key, line=line, hint=f"did you mean '{close[0]}'?")
        return PacketError(doc.file, f"unknown key; allowed keys here: {', '.join(allowed)}", key=key, line=line,
                           hint="remove it, or write one of the allowed keys")
    same_place = [e for e in errors if _data_path(e["loc"], doc.data) == loc]
    return PacketError(doc.file, _message(first, same_place), key=key, line=line, hint=_fix(first, same_place, loc))


def _fix(first: Any, same_place: list[Any], loc: tuple[Any, ...]) -> str | None:
    """How to fix it, where the kind of error says (a validator's own message says its fix itself)."""
    if first["type"] == "missing":
        return f"add `{loc[-1]}:`" if loc else None
    if first["type"] == "literal_error":
        return "write one of the allowed values"
    wanted = list(dict.fromkeys(_expected(e["msg"]) for e in same_place if e["msg"].startswith("Input should")))
    return f"write {' or '.join(wanted)} here" if wanted else None


def _message(first: Any, same_place: list[Any]) -> str:
    if first["type"] == "missing":
        return "required key is missing"
    if first["type"] == "literal_error":
        expected = first.get("ctx", {}).get("expected")
        return f"invalid value {first.get('input')!r}; allowed: {expected}"
    # A union (`str | TargetSpec`, `list | str | int`) reports one error per member: say all it accepts.
    wanted = list(dict.fromkeys(_expected(e["msg"]) for e in same_place if e["msg"].startswith("Input should")))
    if len(wanted) > 1:
        return f"invalid value {first.get('input')!r}; expected {' or '.join(wanted)}"
    return str(first["msg"]).removeprefix("Value error, ")


def _expected(msg: str) -> str:
    text = msg.removeprefix("Input should be ")
    head, sep, name = text.partition("a valid dictionary or instance of ")
    return f"{head}a mapping ({name})" if sep else text


def _most_specific(errors: list[Any]) -> Any:
    """Union branches each report an error; prefer an unknown key, then the deepest location."""
    extra = [e for e in errors if e["type"] == "extra_forbidden"]
    return extra[0] if extra else max(errors, key=lambda e: len(e["loc"]))


def _data_path(loc: tuple[Any, ...], data: Any) -> tuple[Any, ...]:
    """Drop the union-member labels pydantic adds (`str`, `TargetSpec`, ...) by walking the data."""
    path: list[Any] = []
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            node = node[part]
            path.append(part)
    return tuple(path)


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    return sorted({key for m in _models_in(current) for key in _keys(m)})


def _keys(model: type[BaseModel]) -> dict[str, Any]:
    """Field annotations by the key written in YAML: the alias where there is one (`json`, not `json_`)."""
    return {info.alias or name: info.annotation for name, info in model.model_fields.items()}


def _step(annotation: Any, part: Any) -> Any:
    for candidate in _models_in(annotation):
        keys = _keys(candidate)
        if isinstance(part, str) and part in keys:
            return keys[part]
    for arg in _flatten(annotation):
        origin = typing.get_origin(arg)
        if origin in (list, tuple) and isinstance(part, int):
            return typing.get_args(arg)[0]
        if origin is dict:
            return typing.get_args(arg)[1]
    return None


def _flatten(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [a for arg in typing.get_args(annotation) for a in _flatten(arg)]
    return [annotation]


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    return [a for a in _flatten(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
