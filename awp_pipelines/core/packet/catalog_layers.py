"""providers.yaml over the built-in catalog, field by field, remembering which layer set each field.

An entry of `providers:` or `accounts:` that names a built-in one keeps every field it does not write
(`claude: {env: {IS_SANDBOX: '1'}}` keeps the built-in command, credential variable, config folder and
models); a mapping field (`env`) merges key by key. An entry whose `kind` (provider) or `provider` (account)
differs from the built-in's is a new entry under the same name: nothing of the built-in applies to it.
The merge knows no field by name, so a field added to the specs later merges the same way.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from awp_pipelines.core.packet.yamlsrc import YamlDoc

BUILTIN = "built-in"
# The field that says what an entry is: an entry that changes it replaces the built-in instead.
IDENTITY = {"providers": "kind", "accounts": "provider"}


class Origin(NamedTuple):
    """Where a value was set: a file and line, or the built-in catalog (file None)."""

    file: str | None = None
    line: int | None = None

    @property
    def label(self) -> str:
        if self.file is None:
            return BUILTIN
        return self.file + (f":{self.line}" if self.line else "")


# "providers.claude" → field → where it was set; the entry itself under "".
Origins = dict[str, dict[str, Origin]]


def merge_fields(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over`'s fields over `base`'s; a mapping in both merges key by key, any other value replaces."""
    merged = dict(base)
    for key, value in over.items():
        old = base.get(key)
        merged[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def layer_over(base: dict[str, dict[str, Any]], doc: YamlDoc, base_origins: Origins) -> tuple[dict[str, Any], Origins]:
    """The catalog data of `doc` laid over `base` (section → name → fields, as dumped with exclude_unset),
    and where each field of each entry comes from. Anything malformed is passed on for validation to report
    with its line."""
    data = doc.data if isinstance(doc.data, dict) else {}
    merged: dict[str, Any] = dict(data)
    origins: Origins = {key: dict(fields) for key, fields in base_origins.items()}
    for section, entries in base.items():
        given = data.get(section)
        out: dict[str, Any] = dict(entries)
        for name, raw in (given.items() if isinstance(given, dict) else ()):
            key = f"{section}.{name}"
            inherited = entries.get(name)
            identity = IDENTITY.get(section)  # none: an entry (a model alias's chain) replaces the built-in whole
            same = (identity is not None and isinstance(raw, dict) and inherited is not None
                    and raw.get(identity, inherited.get(identity)) == inherited.get(identity))
            out[name] = merge_fields(inherited, raw) if same and inherited is not None else raw
            here = {field: Origin(str(doc.file), doc.line_of((section, name, field)))
                    for field in (raw if isinstance(raw, dict) else {})}
            entry = {"": Origin(str(doc.file), doc.line_of((section, name)))}
            origins[key] = {**(origins.get(key, {}) if same else {}), **here, **entry}
        merged[section] = out if isinstance(given, dict) or given is None else given
    return merged, origins
