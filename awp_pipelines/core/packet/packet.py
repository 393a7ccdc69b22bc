"""Load a packet folder: the manifest plus ordered prompts, with Prompt Runner 0.12.1's semantics."""

from __future__ import annotations

import difflib
import errno
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.ids import ID_RULE, id_problem
from awp_pipelines.core.packet.model.handoff import HandoffSpec
from awp_pipelines.core.packet.model.manifest import Manifest, RemoteSpec, RepoSpec
from awp_pipelines.core.packet.model.prompt import PromptFrontMatter
from awp_pipelines.core.packet.model.recovery import RecoveryConfig, deep_merge
from awp_pipelines.core.packet.parse_cache import parse_cache
from awp_pipelines.core.packet.validation import validate_doc
from awp_pipelines.core.packet.yamlsrc import YamlDoc, parse_yaml, split_front_matter

NATIVE_MANIFEST = "packet.yaml"
PROMPT_RUNNER_MANIFEST = "prompt_runner_packet.md"
PROMPT_SUFFIX = ".prompt.md"
CHECKLIST_SUFFIX = ".prompt.checklist.md"
_PREFIX = re.compile(r"^(\d+)[_-](.+)$")
# Files without a numeric prefix sort after every numbered prompt (Prompt Runner pads prefixes to 6).
_UNNUMBERED = 10**6
# Where a worker clones the packets' remote repos (one folder per packet and repo); unset: <packet>/.awp/trees.
WORK_ROOT_ENV = "AWP_WORK_ROOT"


def normalize_id(value: str | int) -> str:
    """'1', 1 and '001' are all prompt '01'; non-numeric ids are kept as written."""
    text = str(value).strip()
    return f"{int(text):02d}" if text.isdigit() else text


@dataclass(frozen=True)
class Repo:
    name: str
    path: Path
    default: bool
    remote: RemoteSpec | None = None  # a work tree that travels: cloned at `path` on each worker (remote.py)
    handoff: HandoffSpec | None = None  # its packet run's work handed off as a pull request (core/handoff/)


@dataclass(frozen=True)
class Prompt:
    id: str
    number: int
    slug: str
    file: Path
    front: PromptFrontMatter
    body: str
    body_line: int
    recovery: RecoveryConfig
    raw: dict[str, Any] = field(repr=False, hash=False, compare=False)
    doc: YamlDoc = field(repr=False, hash=False, compare=False)
    filename_id: str | None = None

    @property
    def name(self) -> str:
        return self.front.name or self.slug.replace("_", " ").replace("-", " ").capitalize()

    @property
    def declared_depends_on(self) -> list[str] | None:
        deps = self.front.depends_on
        if deps is None:
            return None
        items = deps if isinstance(deps, list) else [deps]
        return [normalize_id(d) for d in items]


@dataclass(frozen=True)
class Packet:
    root: Path
    manifest_file: Path
    manifest: Manifest
    body: str
    prompts: list[Prompt]
    raw: dict[str, Any] = field(repr=False, hash=False, compare=False)
    doc: YamlDoc = field(repr=False, hash=False, compare=False)
    # Where this worker clones remote repos, read once at load (AWP_WORK_ROOT): a packet's paths never move.
    work_root: Path | None = field(default_factory=lambda: _work_root_from_env())

    @property
    def name(self) -> str:
        return self.manifest.name

    @cached_property
    def prompt_dir(self) -> Path:
        return self.root / self.manifest.prompt_dir

    def resolved_file(self, prompt: Prompt) -> Path:
        """`prompt.file.resolve()`, with the prompt folder resolved once per packet (each `resolve` walks every
        folder of the path)."""
        file = prompt.file
        if file.parent != self.prompt_dir or file.is_symlink():
            return file.resolve()
        return self._resolved_prompt_dir / file.name

    @cached_property
    def _resolved_prompt_dir(self) -> Path:
        return self.prompt_dir.resolve()

    @cached_property
    def repos(self) -> dict[str, Repo]:
        """Resolved once per packet (the plan and the translator ask per prompt; its paths never move)."""
        specs: dict[str, RepoSpec] = self.manifest.repo_map()
        return {name: Repo(name, self._repo_path(name, spec), spec.default, spec.remote, spec.handoff)
                for name, spec in specs.items()}

    def _repo_path(self, name: str, spec: RepoSpec) -> Path:
        if spec.path is not None:
            return (self.root / spec.path).resolve()
        # Each worker (host) clones into its own work folder: AWP_WORK_ROOT, else the packet's state folder.
        base = self.work_root / self.name if self.work_root else self.root / ".awp" / "trees"
        return (base / name).resolve()

    @property
    def default_repo(self) -> str | None:
        repos = self.repos
        for name, repo in repos.items():
            if repo.default:
                return name
        return next(iter(repos), None)

    def prompt(self, prompt_id: str) -> Prompt:
        wanted = normalize_id(prompt_id)
        for p in self.prompts:
            if p.id == wanted:
                return p
        raise KeyError(prompt_id)

    def dependencies(self, prompt: Prompt) -> list[str]:
        """`depends_on` when given, else the previous prompt in order (a linear packet)."""
        declared = prompt.declared_depends_on
        if declared is not None:
            return declared
        # By identity first: `list.index` compares every field of every earlier prompt (their models too).
        index = next((i for i, p in enumerate(self.prompts) if p is prompt), None)
        if index is None:
            index = self.prompts.index(prompt)
        return [self.prompts[index - 1].id] if index > 0 else []


def _work_root_from_env() -> Path | None:
    value = os.environ.get(WORK_ROOT_ENV, "").strip()
    return Path(value) if value else None


def find_manifest(root: Path) -> Path:
    for name in (NATIVE_MANIFEST, PROMPT_RUNNER_MANIFEST):
        if (root / name).is_file():
            return root / name
    below = packets_below(root)
    if below:
        shown = ", ".join(str(p.relative_to(root)) for p in below[:8]) + (" …" if len(below) > 8 else "")
        raise PacketError(root, "this folder is not a packet",
                          hint=f"packets below it: {shown}; name one, e.g. `{below[0].relative_to(root)}`")
    raise PacketError(root, "no packet manifest found",
                      hint=f"create {NATIVE_MANIFEST} (or Prompt Runner's {PROMPT_RUNNER_MANIFEST}); "
                      "`awp packet new` writes one")


_NOT_SEARCHED = {"node_modules", "__pycache__", "workspace", "site-packages"}


# A project's packets: the code location serves the packets of this folder (definitions.REPO_PACKETS_DIR).
PROJECT_PACKETS = "assets"


def packets_below(root: Path, depth: int = 3) -> list[Path]:
    """The packet folders under `root` (a manifest in them), up to `depth` levels down, sorted; hidden folders,
    virtual environments and the demo's work trees are not searched (a mistyped path must not walk a disk). At a
    project root, its packets are those under assets/ (what the UI serves), not a test suite's fixtures."""
    if root / PROJECT_PACKETS != root and (project := _packets_in(root / PROJECT_PACKETS, depth - 1)):
        return project
    return _packets_in(root, depth)


def _packets_in(root: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    level = [root]
    for _ in range(depth):
        nxt: list[Path] = []
        for folder in level:
            try:
                children = sorted(c for c in folder.iterdir() if c.is_dir())
            except OSError:
                continue
            for child in children:
                if child.name.startswith(".") or child.name in _NOT_SEARCHED or (child / "pyvenv.cfg").exists():
                    continue
                if any((child / m).is_file() for m in (NATIVE_MANIFEST, PROMPT_RUNNER_MANIFEST)):
                    found.append(child)
                else:
                    nxt.append(child)
        level = nxt
    return sorted(found)


def load_packet(path: Path | str) -> Packet:
    given = Path(path)
    if not given.exists():
        raise PacketError(given, "no such packet folder", hint="pass the folder that holds the manifest")
    root = (given.parent if given.is_file() else given).resolve()
    with parse_cache(root):  # its YAML parsed once for every process that loads it unchanged
        return _load(given, root)


def _load(given: Path, root: Path) -> Packet:
    manifest_file = find_manifest(root) if given.is_dir() else given.resolve()
    if manifest_file.name == NATIVE_MANIFEST:
        doc = parse_yaml(_read(manifest_file), manifest_file)
        if doc.data is None:
            doc.data = {}
        body = ""
    else:
        fm = split_front_matter(_read(manifest_file), manifest_file)
        doc, body = fm.doc, fm.body
    if not isinstance(doc.data, dict):
        raise PacketError(manifest_file, "the manifest must be a YAML mapping of keys", line=1,
                          hint="write one `key: value` per line, starting with `name: my-packet`")
    manifest = validate_doc(Manifest, doc)
    _check_repos(manifest, doc)
    _check_prompt_dir(root, manifest, doc)
    prompts = _load_prompts(root / manifest.prompt_dir, doc.data.get("recovery") or {})
    return Packet(root, manifest_file, manifest, body, prompts, doc.data, doc)


def _check_repos(manifest: Manifest, doc: YamlDoc) -> None:
    specs = manifest.repo_map()
    defaults = [name for name, spec in specs.items() if spec.default]
    if len(defaults) > 1:
        raise PacketError(doc.file, f"more than one default repo: {', '.join(defaults)}", key="repos",
                          line=doc.line_of(("repos",)), hint="mark exactly one repo `default: true`")


def _check_prompt_dir(root: Path, manifest: Manifest, doc: YamlDoc) -> None:
    """A `prompt_dir` written but not there is a typo to say, not a packet of no prompts (`no prompt matches`). The
    default folder may be absent: a packet with no prompts yet (`awp run` says so)."""
    folder = root / manifest.prompt_dir
    if folder.is_dir() or "prompt_dir" not in manifest.model_fields_set:
        return
    holding = sorted(str(f.parent.relative_to(root)) for f in root.glob(f"*/*{PROMPT_SUFFIX}"))
    close = difflib.get_close_matches(str(manifest.prompt_dir), holding, n=1)
    hint = (f"did you mean '{close[0]}'?" if close else
            f"folders holding prompts: {', '.join(dict.fromkeys(holding))}" if holding else
            f"create {folder} (`awp prompt new` writes NN_slug{PROMPT_SUFFIX} files into it)")
    what = "is a file, not a folder of prompts" if folder.exists() else "is no folder of the packet"
    raise PacketError(doc.file, f"'{manifest.prompt_dir}' {what}", key="prompt_dir",
                      line=doc.line_of(("prompt_dir",)), hint=hint)


def _load_prompts(prompt_dir: Path, packet_recovery: dict[str, Any]) -> list[Prompt]:
    if not prompt_dir.is_dir():
        return []
    named = [f for f in prompt_dir.iterdir()
             if f.name.endswith(PROMPT_SUFFIX) and not f.name.endswith(CHECKLIST_SUFFIX)]
    for f in named:
        _check_not_broken_link(f)
    files = [f for f in named if f.is_file()]
    prompts = [_load_prompt(f, packet_recovery) for f in files]
    return sorted(prompts, key=lambda p: (p.number, p.file.name))


def _load_prompt(file: Path, packet_recovery: dict[str, Any]) -> Prompt:
    fm = split_front_matter(_read(file), file)
    front = validate_doc(PromptFrontMatter, fm.doc)
    stem = file.name[: -len(PROMPT_SUFFIX)]
    match = _PREFIX.match(stem)
    number, slug = (int(match.group(1)), match.group(2)) if match else (_UNNUMBERED, stem)
    filename_id = normalize_id(match.group(1)) if match else None
    prompt_id = normalize_id(front.id) if front.id is not None else (filename_id or stem)
    _check_prompt_id(prompt_id, file, fm.doc, from_front=front.id is not None)
    merged = deep_merge(packet_recovery, fm.doc.data.get("recovery") or {})
    recovery = validate_doc(RecoveryConfig, fm.doc, data=merged)
    return Prompt(prompt_id, number, slug, file, front, fm.body, fm.body_line, recovery,
                  fm.doc.data, fm.doc, filename_id)


def _check_not_broken_link(file: Path) -> None:
    """A prompt that is a dangling or looping symlink is an error, not a prompt silently left out of the run."""
    if not file.is_symlink():
        return
    try:
        file.resolve(strict=True)
    except RuntimeError:  # Python < 3.13 reports a loop this way
        raise PacketError(file, "prompt file is a symlink loop",
                          hint="point the link at a real file, or remove it") from None
    except OSError as err:
        what = "a symlink loop" if err.errno == errno.ELOOP else f"a dangling symlink (to {os.readlink(file)})"
        raise PacketError(file, f"prompt file is {what}", hint="point the link at a real file, or remove it"
                          ) from None


def _check_prompt_id(prompt_id: str, file: Path, doc: YamlDoc, *, from_front: bool) -> None:
    """The id names files under .awp/ and goes into run tags and commit trailers: an identifier, nothing more."""
    problem = id_problem(prompt_id)
    if problem is None:
        return
    if from_front:
        raise PacketError(file, f"prompt id {_shown(prompt_id)} {problem}", key="id", line=doc.line_of(("id",)),
                          hint=f"use an id like \"01\": {ID_RULE}")
    raise PacketError(file, f"prompt id {_shown(prompt_id)} (from the filename) {problem}", line=1,
                      hint=f"rename the file NN_slug.prompt.md, or set `id:` in its front matter: {ID_RULE}")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        raise PacketError(file, f"not UTF-8 text (byte 0x{err.object[err.start]:02x})", line=line,
                          hint="save the file as UTF-8") from None
    except OSError as err:
        raise PacketError(file, f"cannot read: {err.strerror}") from None
