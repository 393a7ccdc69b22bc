"""The `verify:` block of a prompt: Prompt Runner 0.12.1's twelve clauses as a strict pydantic model.

Key names and defaults follow Prompt Runner so its packets verify unchanged. Where Prompt Runner is silent or
loose, the chosen shape is stated in the field description (the JSON Schema and `awp schema` read them).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from awp_pipelines.core.isolation.network_setting import NetworkSetting

from .pathtext import PathText

# Prompt Runner's defaults, plus the scaffold placeholder so an unfilled template never passes as a document.
DEFAULT_FORBIDDEN_MARKERS: tuple[str, ...] = ("TODO", "TBD", "FIXME", "XXX", "<!-- prompt_runner:placeholder")
# Directories no source scan wants to read; an entry's `prune` adds to these.
DEFAULT_PRUNE: tuple[str, ...] = (
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    "_build",
    "deps",
    ".elixir_ls",
    "cover",
)
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_REMOTE_TIMEOUT_MS = 90_000

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
    return pattern


class RepoPath(BaseModel):
    """A path inside one repository (or the packet folder)."""

    model_config = _STRICT

    repo: str | None = Field(
        default=None,
        description="Repository name from the manifest's `repos`, or `packet` for the packet folder; "
        "omitted means the prompt's default repository.",
    )
    path: PathText = Field(
        description="Path relative to the repository root. Absolute paths, `..` that leaves the root and "
        "symlinks resolving outside it fail the item."
    )


# An entry is "path", "repo:path" (only when `repo` names a known repository) or {repo, path}.
Entry = PathText | RepoPath


class ContainsCheck(RepoPath):
    """`contains`: the file exists and contains a literal text."""

    text: str = Field(description="Literal text the file must contain (case-sensitive substring).")


class MatchesCheck(RepoPath):
    """`matches`: the file exists and a regular expression finds a match in it."""

    pattern: str = Field(
        description="Regular expression (Python `re` syntax) searched anywhere in the file; no flags."
    )

    @field_validator("pattern")
    @classmethod
    def _valid(cls, pattern: str) -> str:
        return _compiles(pattern)


class DocCheck(RepoPath):
    """`doc`: a written deliverable with substance, not a stub."""

    min_lines: int = Field(
        default=1,
        ge=0,
        description="Advisory floor on non-blank lines: reported in the details, never fails the item.",
    )
    requires_sections: list[str] = Field(
        default_factory=list,
        description="Markdown ATX headings that must exist (outside fenced code). `## Method` requires that "
        "exact level and text; `Method` (no leading #) accepts any heading level.",
    )
    forbids_markers: list[str] | None = Field(
        default=None,
        description="Substrings that must not appear on any line. Omitted or null means "
        f"{list(DEFAULT_FORBIDDEN_MARKERS)}; a list replaces the default; [] disables the check.",
    )

    def markers(self) -> tuple[str, ...]:
        return DEFAULT_FORBIDDEN_MARKERS if self.forbids_markers is None else tuple(self.forbids_markers)


class YamlCheck(RepoPath):
    """`yaml`: the file parses as YAML (safe loader), optionally with a given root type."""

    root: Literal["map", "list", "scalar"] | None = Field(
        default=None, description="Expected root type: map, list or scalar; omitted means any."
    )


class ArrayItemsRequire(BaseModel):
    """Every item of the array at `path` is an object holding all `keys`."""

    model_config = _STRICT

    path: str = Field(description="Dotted path to an array (`` for the root; digits index arrays).")
    keys: list[str] = Field(min_length=1, description="Keys every item of the array must have.")


class ArrayNoneMatch(BaseModel):
    """No object in the array at `path` has a `field` that matches (`pattern`) or equals (`equals`)."""

    model_config = _STRICT

    path: str = Field(description="Dotted path to an array (`` for the root; digits index arrays).")
    field: str = Field(description="Key looked up in each object of the array.")
    pattern: str | None = Field(
        default=None,
        description="Regular expression searched in the field's value (strings as is, other values as "
        "JSON). Give exactly one of `pattern` and `equals`.",
    )
    equals: Any = Field(
        default=None,
        description="Prompt Runner's form: the field's value must not equal this JSON value (null allowed). "
        "Give exactly one of `pattern` and `equals`.",
    )

    @field_validator("pattern")
    @classmethod
    def _valid(cls, pattern: str | None) -> str | None:
        return pattern if pattern is None else _compiles(pattern)

    @model_validator(mode="after")
    def _one_matcher(self) -> ArrayNoneMatch:
        given = {"pattern", "equals"} & self.model_fields_set
        if len(given) != 1 or ("pattern" in given and self.pattern is None):
            raise ValueError("array_none_match needs exactly one of `pattern` and `equals`")
        return self


class JsonCheck(RepoPath):
    """`json`: the file parses as JSON and has the declared shape."""

    root: Literal["object", "array", "map", "list"] | None = Field(
        default=None,
        description="Expected root type: object or array (`map`/`list` are Prompt Runner's spellings of "
        "the same); omitted means any.",
    )
    required_paths: list[str] = Field(
        default_factory=list,
        description="Dotted paths that must exist (`a.b.0.c`: keys of objects, digits index arrays).",
    )
    non_empty_paths: list[str] = Field(
        default_factory=list,
        description="Dotted paths that must exist and hold something other than null, \"\", [] or {}.",
    )
    array_items_require: list[ArrayItemsRequire] = Field(
        default_factory=list,
        description="List of {path, keys}. Prompt Runner's mapping form {path: [keys]} is accepted too.",
    )
    array_none_match: list[ArrayNoneMatch] = Field(
        default_factory=list,
        description="List of {path, field, pattern|equals}: no array item may match. A path that is "
        "absent or not an array has nothing to match and passes (as in Prompt Runner).",
    )

    @field_validator("array_items_require", mode="before")
    @classmethod
    def _mapping_form(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return [{"path": path, "keys": keys} for path, keys in value.items()]
        return value


class GlobCheck(RepoPath):
    """`glob`: how many files a glob pattern matches, and optionally that each is non-empty."""

    path: PathText = Field(
        description="Glob pattern relative to the repository root (`*`, `?`, `[..]`, `**` for any depth; "
        "`*` does not match names starting with a dot)."
    )
    min_matches: int = Field(default=1, ge=0, description="Fewest matches allowed.")
    max_matches: int | None = Field(default=None, ge=0, description="Most matches allowed; null: no limit.")
    non_empty: bool = Field(default=False, description="Each match must be a regular, non-empty file.")


class SourceAbsentCheck(RepoPath):
    """`source_absent`: no line of the source files under `path` matches a forbidden regex."""

    path: PathText = Field(description="File or directory to scan, relative to the repository root.")
    patterns: list[str] = Field(
        min_length=1, description="Regular expressions searched line by line; any hit fails the item."
    )
    extensions: list[str] = Field(
        default_factory=list,
        description="Only files with these extensions are read (`.py` or `py`); empty means every file. "
        "Binary files (a NUL byte in the first 8 KiB) and symlinks are skipped.",
    )
    prune: list[str] = Field(
        default_factory=list,
        description=f"Directory names skipped at any depth, added to the defaults {list(DEFAULT_PRUNE)}.",
    )

    @field_validator("patterns")
    @classmethod
    def _valid(cls, patterns: list[str]) -> list[str]:
        return [_compiles(pattern) for pattern in patterns]


class CommandCheck(BaseModel):
    """`commands`: run one executable with arguments (never through a shell) and judge its exit."""

    model_config = _STRICT

    repo: str | None = Field(
        default=None, description="Repository the command runs in; omitted means the default repository."
    )
    exec: PathText = Field(
        min_length=1,
        description="Executable: a bare name looked up on PATH (missing: verifier_fault), an absolute path "
        "(missing: verifier_fault) or a path relative to `cwd` such as `bin/check` (missing: an ordinary, "
        "repairable failure, since the prompt may be expected to create it).",
    )
    args: list[str] = Field(default_factory=list, description="Arguments, passed as argv.")
    cwd: PathText = Field(
        default=".", description="Working directory relative to the repository root; it must exist."
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment. In the verifier's sandbox the command sees only PATH, a private HOME "
        "and TMPDIR, LANG and these; with `isolation: none`, PATH, HOME and LANG of the runner and these.",
    )
    network: NetworkSetting | None = Field(
        default=None,
        description="What the command may reach from the verifier's sandbox: `none` (default), `open` (any "
        "host but this machine) or a list of hosts (`pypi.org`, `host:port`, `*.domain`), as the agent's "
        "`network`. A verifier has no provider: `provider` is refused.",
    )
    timeout_ms: int = Field(
        default=DEFAULT_TIMEOUT_MS, gt=0, description="Kill the command after this long: verifier_timeout."
    )
    fault_exit_codes: list[int] = Field(
        default_factory=list,
        description="Exit codes meaning the check could not run (verifier_fault), not that the work is wrong.",
    )
    stdout_contains: str | None = Field(
        default=None,
        description="Literal text the output must contain. Output is stdout and stderr interleaved, as in "
        "Prompt Runner.",
    )
    stdout_matches: str | None = Field(
        default=None,
        description="Regular expression the output must match: searched case-insensitively, as in Prompt "
        "Runner. Output is stdout and stderr interleaved.",
    )
    regenerates: list[PathText] = Field(
        default_factory=list,
        description="Files (relative to the repository root) the command must write afresh: each is moved "
        "aside first and must exist non-empty afterwards; on any failure the previous file is restored.",
    )

    @field_validator("fault_exit_codes")
    @classmethod
    def _exit_codes(cls, codes: list[int]) -> list[int]:
        bad = [code for code in codes if not 0 <= code <= 255]
        if bad:
            raise ValueError(f"exit codes must be 0..255, got {bad}")
        return codes

    @field_validator("stdout_matches")
    @classmethod
    def _valid(cls, pattern: str | None) -> str | None:
        return pattern if pattern is None else _compiles(pattern)

    @field_validator("network")
    @classmethod
    def _no_provider(cls, network: list[str] | None) -> list[str] | None:
        if network and "provider" in network:
            raise ValueError("a verifier's command has no provider to reach: write `none`, `open` or a list of "
                             "hosts (pypi.org, host:port, *.domain)")
        return network


def command_text(command: CommandCheck, *, with_repo: bool = False) -> str:
    """The command as one line of argv (`repo: exec args` with its repo): labels, names and results say it so."""
    argv = shlex.join([command.exec, *command.args])
    return f"{command.repo}: {argv}" if with_repo and command.repo else argv


class ReposCleanCheck(BaseModel):
    """`repos_clean`: the repository has no uncommitted changes (and, optionally, HEAD is pushed)."""

    model_config = _STRICT

    repo: str | None = Field(default=None, description="Repository to check; omitted means the default.")
    pushed: bool = Field(
        default=False,
        description="Also require an upstream whose branch head equals the local HEAD. A branch without an "
        "upstream fails when true and is fine when false.",
    )
    network: bool = Field(
        default=True,
        description="With `pushed`, ask the remote (`git ls-remote`, read-only). False compares against the "
        "cached remote-tracking ref only. An unreachable remote falls back to the cached ref and says so.",
    )
    remote_timeout_ms: int = Field(
        default=DEFAULT_REMOTE_TIMEOUT_MS, gt=0, description="Bound on the remote query."
    )


class VerifyContract(BaseModel):
    """A prompt's deterministic completion contract (front-matter key `verify:`)."""

    # `json` would shadow BaseModel.json, so the Python name is `json_`; the alias keeps the YAML key.
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    files_exist: list[Entry] = Field(default_factory=list, description="Paths that must exist.")
    files_absent: list[Entry] = Field(default_factory=list, description="Paths that must not exist.")
    contains: list[ContainsCheck] = Field(
        default_factory=list, description="Files that must contain a literal text: {repo?, path, text}."
    )
    matches: list[MatchesCheck] = Field(
        default_factory=list, description="Files a regular expression must match: {repo?, path, pattern}."
    )
    # A mapping is always a DocCheck (a RepoPath with options), so options are never dropped by the union.
    doc: list[PathText | DocCheck] = Field(
        default_factory=list,
        description="Documents: a path, or {repo?, path, min_lines, requires_sections, forbids_markers}.",
    )
    yaml: list[YamlCheck] = Field(default_factory=list, description="YAML files: {repo?, path, root}.")
    json_: list[JsonCheck] = Field(
        default_factory=list,
        alias="json",
        description="JSON files: {repo?, path, root, required_paths, non_empty_paths, array_items_require, "
        "array_none_match}.",
    )
    glob: list[GlobCheck] = Field(
        default_factory=list,
        description="Glob cardinality: {repo?, path (pattern), min_matches, max_matches, non_empty}.",
    )
    source_absent: list[SourceAbsentCheck] = Field(
        default_factory=list,
        description="Forbidden source patterns: {repo?, path, patterns, extensions, prune}.",
    )
    commands: list[CommandCheck] = Field(
        default_factory=list, description="Commands that must exit 0 (argv, never a shell)."
    )
    changed_paths_only: list[Entry] = Field(
        default_factory=list,
        description="The only paths allowed to differ from HEAD (modified, staged, deleted, renamed or "
        "untracked) in each repository these entries name. An entry ending in `/` allows everything below "
        "it. One check for the whole clause.",
    )
    repos_clean: list[ReposCleanCheck] = Field(
        default_factory=list,
        description="Repositories that must be committed (and pushed): one entry, a list, or repo names. "
        "One check for the whole clause.",
    )

    @field_validator("repos_clean", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        return [{"repo": item} if isinstance(item, str) else item for item in items]

    def is_empty(self) -> bool:
        """True when the contract has no item at all (nothing would be verified)."""
        return not any(getattr(self, name) for name in type(self).model_fields)
