"""Author packets: scaffold a manifest, add numbered prompts from templates, sync checklists, write profiles.

Pure file operations (no Dagster, no provider): every write is atomic (a temporary file in the same folder,
then `os.replace`), so an interrupted command never leaves half a prompt or a truncated checklist behind.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from awp_pipelines.core.packet import home_profile as home
from awp_pipelines.core.packet.agents import ROLES, AgentSpec, agent_of
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.home_profile import ProfileSettings
from awp_pipelines.core.packet.model.contract import VerifyContract
from awp_pipelines.core.packet.model.prompt import PromptFrontMatter
from awp_pipelines.core.packet.packet import (
    CHECKLIST_SUFFIX,
    NATIVE_MANIFEST,
    PROMPT_RUNNER_MANIFEST,
    PROMPT_SUFFIX,
    Packet,
    load_packet,
    normalize_id,
)
from awp_pipelines.core.packet.templates import PACKET_TEMPLATES, find_template
from awp_pipelines.core.packet.validation import to_packet_error, validate_doc
from awp_pipelines.core.packet.yamlsrc import YamlDoc, split_front_matter
from awp_pipelines.core.verifiers.checklist import checklist_markdown

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
# The verify placeholder names a file nobody creates: an unedited contract fails instead of passing vacuously.
VERIFY_PLACEHOLDER = "REPLACE_ME.md"
DEFAULT_TEMPLATE = "default"

DEFAULT_BODY = """\
# {{name}}

## Mission

<!-- prompt_runner:placeholder mission -->
Describe the exact work to perform.

## Deliverables

<!-- prompt_runner:placeholder deliverables -->
- List the exact files, outputs or behaviour changes required.

## Verification Notes

<!-- prompt_runner:placeholder verification_notes -->
- Turn each deliverable into a `verify:` entry in the front matter before running the packet.
"""


def check_slug(value: str, what: str, where: Path | str) -> str:
    if not _SLUG.match(value):
        raise PacketError(where, f"invalid {what} {value!r}",
                          hint="use lowercase letters, digits, '_' and '-', starting with a letter or digit")
    return value


def write_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8, newlines as given) to a temporary sibling, then rename it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else _default_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _quote(value: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def _dump(key: str, value: Any) -> str:
    return yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)


# --- packet -------------------------------------------------------------------------------------------------


# The folder of a project's packets: the code location (definitions.REPO_PACKETS_DIR) discovers them there.
PACKETS_DIR = "assets"


def packet_folder(folder: str, cwd: Path) -> Path:
    """Where `awp packet new FOLDER` writes. A bare name (no `/`) run at a project root (a folder with
    assets/) goes under assets/, where the UI shows it; a path, even `./NAME`, is taken as given."""
    bare_name = "/" not in folder and os.sep not in folder and folder not in (".", "..")
    if bare_name and (cwd / PACKETS_DIR).is_dir():
        return Path(PACKETS_DIR) / folder
    return Path(folder)


def parse_repo_spec(text: str) -> tuple[str, str]:
    """`NAME=PATH` (the `--repo` flag) → (name, path)."""
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise PacketError("--repo", f"expected NAME=PATH, got {text!r}", hint="e.g. --repo app=../app")
    return check_slug(name.strip(), "repo name", "--repo"), path.strip()


def _default_packet_name(folder: Path) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", folder.resolve().name.lower()).strip("-_")


def new_packet(folder: Path | str, name: str | None = None, native: bool = True,
               repo: Mapping[str, str] | None = None) -> Path:
    """Create a packet in `folder`: a manifest (packet.yaml, or Prompt Runner's prompt_runner_packet.md when
    `native` is False) and an empty prompts/ folder. `repo` maps repo names to paths relative to the packet;
    the first is the default. Returns the manifest path."""
    root = Path(folder)
    for existing in (NATIVE_MANIFEST, PROMPT_RUNNER_MANIFEST):
        if (root / existing).exists():
            raise PacketError(root / existing, "a packet manifest already exists here",
                              hint="choose another folder, or add prompts with `awp prompt new`")
    name = name if name is not None else _default_packet_name(root)
    if not name:
        raise PacketError(root, "cannot derive a packet name from the folder", hint="pass --name")
    check_slug(name, "packet name", root)
    repos = dict(repo or {})
    for repo_name in repos:
        check_slug(repo_name, "repo name", root)
    keys = _manifest_keys(name, repos)
    if native:
        manifest = root / NATIVE_MANIFEST
        text = "# AWP packet manifest: keys and defaults follow Prompt Runner 0.12.1 (`awp schema manifest`).\n" + keys
    else:
        manifest = root / PROMPT_RUNNER_MANIFEST
        text = f"---\n{keys}---\n# {name}\n\nWhat this packet does, for the people who read it (never sent).\n"
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    write_atomic(manifest, text)
    return manifest


def _manifest_keys(name: str, repos: Mapping[str, str]) -> str:
    lines = [
        f"name: {_quote(name)}",
        "# provider and model are left unset: they come from AWP_PROVIDER/AWP_MODEL, the home config.md, a",
        "# `profile:`, prompt front matter or --provider/--model, and the provider is inferred from the model",
        "# (default model: haiku). Set them here to pin the packet to one provider:",
        "# provider: claude",
        "# model: haiku",
        "# timeout: 45m   # the single bound of an Attempt; unset means seven days",
    ]
    if repos:
        lines.append("repos:")
        for index, (repo_name, path) in enumerate(repos.items()):
            lines += [f"  {repo_name}:", f"    path: {_quote(path)}"]
            if index == 0:
                lines.append("    default: true")
    else:
        lines += ["# repos:           # the repositories prompts work in; the default one is the agent's cwd",
                  "#   app:", "#     path: \"../app\"", "#     default: true"]
    return "\n".join(lines) + "\n"


# --- prompt -------------------------------------------------------------------------------------------------


def _load_template(packet: Packet, name: str | None) -> tuple[str | None, dict[str, Any], str]:
    """(template name used, its front matter, its body). No template at all → the built-in default body."""
    key = "template" if name else "prompt_template"
    chosen = name or packet.manifest.prompt_template
    if not chosen:
        return None, {}, DEFAULT_BODY
    check_slug(chosen, "template name", packet.manifest_file if key == "prompt_template" else "--template")
    file = find_template(packet.root, chosen)
    if file is None:
        if chosen == DEFAULT_TEMPLATE:
            return None, {}, DEFAULT_BODY
        raise PacketError(packet.manifest_file if key == "prompt_template" else packet.root,
                          f"no template '{chosen}'", key=key,
                          hint=f"looked for {chosen}{PROMPT_SUFFIX} in {packet.root / PACKET_TEMPLATES} "
                          f"and {home.templates_dir()}")
    fm = split_front_matter(file.read_text(encoding="utf-8"), file, required=False)
    validate_doc(PromptFrontMatter, fm.doc)
    return chosen, dict(fm.doc.data), fm.body


def _next_id(packet: Packet) -> str:
    taken = {p.id for p in packet.prompts}
    number = max((p.number for p in packet.prompts if p.filename_id is not None), default=0) + 1
    while normalize_id(number) in taken:
        number += 1
    return normalize_id(number)


def _phase_value(packet: Packet, phase: str | None) -> int | str | None:
    phases = packet.manifest.phases
    if phase is None:
        previous = packet.prompts[-1].front.phase if packet.prompts else None
        if previous is not None:
            return previous
        phase = next(iter(phases), None)
        if phase is None:
            return None
    elif phases and str(phase) not in phases:
        raise PacketError(packet.manifest_file, f"no phase '{phase}'", key="phases",
                          hint=f"known phases: {', '.join(phases)}")
    return int(phase) if str(phase).isdigit() else phase


def _targets(packet: Packet, targets: Sequence[str] | None) -> list[str]:
    repos = packet.repos
    if not targets:
        return [packet.default_repo] if packet.default_repo else []
    unknown = [t for t in targets if t not in repos]
    if unknown:
        raise PacketError(packet.manifest_file, f"unknown target repo '{unknown[0]}'", key="repos",
                          hint=f"known repos: {', '.join(repos) or 'none (add one under repos:)'}")
    return list(targets)


def _render(body: str, values: Mapping[str, Any]) -> str:
    targets = values.get("targets") or []
    replacements = {
        "id": values["id"], "name": values["name"], "phase": values.get("phase") or "",
        "commit": values["commit"], "targets_csv": ", ".join(targets),
        "targets_bullets": "\n".join(f"- `{t}`" for t in targets) or "- Add target repos here.",
    }
    for key, value in replacements.items():
        body = body.replace("{{" + key + "}}", str(value))
    return body


def new_prompt(packet_dir: Path | str, slug: str, name: str | None = None, template: str | None = None,
               phase: str | None = None, targets: Sequence[str] | None = None, agent: str | None = None,
               agents: Mapping[str, AgentSpec] | None = None) -> Path:
    """Add `prompts/NN_slug.prompt.md` with the next free number. The body comes from `template` (else the
    `agent`'s template in `agents`, the catalog's; else the manifest's `prompt_template`, else a default
    Mission / Deliverables / Verification Notes body); the front matter names id, name, agent, phase,
    targets, a commit message and a placeholder `verify:` contract."""
    packet = load_packet(packet_dir)
    check_slug(slug, "prompt slug", packet.root)
    prompt_id = _next_id(packet)
    title = name or slug.replace("_", " ").replace("-", " ").capitalize()
    spec = agent_of(agent, dict(agents or {})) if agent else None
    if agent and spec is None:
        raise PacketError("--agent", f"no agent '{agent}'", hint=f"a role ({', '.join(ROLES)}) or one of "
                          f"providers.yaml's agents: {', '.join(agents or {}) or 'none'}")
    template_name, template_front, body = _load_template(packet, template or (spec.template if spec else None))
    values: dict[str, Any] = {"id": prompt_id, "name": title, **({"agent": agent} if agent else {})}
    phase_value = _phase_value(packet, phase)
    if phase_value is not None:
        values["phase"] = phase_value
    if template_name:
        values["template"] = template_name
    target_list = _targets(packet, targets)
    if target_list:
        values["targets"] = target_list
    values["commit"] = f"feat: {slug.replace('_', ' ').replace('-', ' ')}"
    extra = {k: v for k, v in template_front.items() if k not in values and k != "verify"}
    verify = dict(template_front.get("verify") or {})
    if not verify.get("files_exist"):
        verify = {"files_exist": [VERIFY_PLACEHOLDER], **{k: v for k, v in verify.items() if k != "files_exist"}}
    front = "".join(_dump(k, v) for k, v in values.items() if k != "commit")
    front += "# the commit message for this prompt's changes; without it: the Mission's first line\n"
    front += _dump("commit", values["commit"])
    front += "".join(_dump(k, v) for k, v in extra.items())
    front += (f"# the deterministic completion contract: {VERIFY_PLACEHOLDER} is a placeholder, so the prompt\n"
              "# cannot pass until it names the real deliverables (`awp schema prompt` lists every clause)\n")
    front += _dump("verify", verify)
    file = packet.prompt_dir / f"{prompt_id}_{slug}{PROMPT_SUFFIX}"
    text = f"---\n{front}---\n{_render(body, values)}"
    validate_doc(PromptFrontMatter, split_front_matter(text, file).doc)
    if file.exists():
        raise PacketError(file, "prompt file already exists", hint="choose another slug")
    write_atomic(file, text)
    return file


# --- checklists ---------------------------------------------------------------------------------------------


def checklist_path(prompt_file: Path) -> Path:
    return prompt_file.with_name(prompt_file.name[: -len(PROMPT_SUFFIX)] + CHECKLIST_SUFFIX)


def sync_checklists(packet: Packet | Path | str, check: bool = False) -> list[Path]:
    """Write `NN_slug.prompt.checklist.md` next to each prompt from its `verify:` contract, byte for byte as
    Prompt Runner's `checklist sync`. Only files whose content changes are written; returns those paths.
    With `check`, nothing is written and the returned paths are the ones that are out of date."""
    loaded = packet if isinstance(packet, Packet) else load_packet(packet)
    changed: list[Path] = []
    for prompt in loaded.prompts:
        target = checklist_path(prompt.file)
        text = checklist_markdown(prompt.id, prompt.name, prompt.front.verify or VerifyContract())
        current = target.read_bytes() if target.is_file() else None
        if current == text.encode("utf-8"):
            continue
        changed.append(target)
        if not check:
            write_atomic(target, text)
    return changed


# --- profiles -----------------------------------------------------------------------------------------------


def new_profile(name: str, provider: str | None = None, model: str | None = None, effort: str | None = None,
                force: bool = False) -> Path:
    """Write `profiles_dir()/NAME.md`: YAML front matter with the given execution defaults."""
    file = home.profiles_dir() / f"{name}.md"
    check_slug(name, "profile name", file)
    if file.exists() and not force:
        raise PacketError(file, "profile already exists", hint="pass --force to overwrite it")
    values = {"provider": provider, "model": model, "reasoning_effort": effort}
    try:
        ProfileSettings.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as err:
        raise to_packet_error(err, ProfileSettings, YamlDoc(file, values)) from None
    examples = {"provider": "claude", "model": "haiku", "reasoning_effort": "medium"}
    lines = [f"{key}: {_quote(value)}" if value is not None else f"# {key}: {examples[key]}"
             for key, value in values.items()]
    text = (
        "---\n"
        f"# AWP home profile '{name}': execution defaults for packets whose manifest says `profile: {name}`\n"
        "# (or `--profile`). Layered: defaults, env, config.md, this profile, packet, prompt, CLI flags.\n"
        + "\n".join(lines)
        + "\n---\n"
        + f"# Profile {name}\n\nWhen to use this profile (notes for people; awp reads only the front matter).\n"
    )
    write_atomic(file, text)
    return file


# --- home ---------------------------------------------------------------------------------------------------

SIMULATED_PROFILE = "simulated-default"


def init_home() -> dict[str, Path]:
    """Prompt Runner's `init`: the home config (config.md), a `simulated-default` profile and the templates
    folder with its `default` template, under AWP_CONFIG_HOME (default ~/.config/awp). What exists is kept:
    running it twice changes nothing."""
    config = home.config_home() / "config.md"
    if not config.exists():
        write_atomic(config, "---\n# AWP home config: execution defaults for every packet (layered: defaults, env, "
                     "this file, a profile, packet, prompt, CLI flags).\n# provider: claude\n# model: haiku\n---\n"
                     "# AWP home config\n\nNotes for people; awp reads only the front matter.\n")
    profile = home.profiles_dir() / f"{SIMULATED_PROFILE}.md"
    if not profile.exists():
        new_profile(SIMULATED_PROFILE, provider="simulated")
    template = home.templates_dir() / f"{DEFAULT_TEMPLATE}{PROMPT_SUFFIX}"
    if not template.exists():
        write_atomic(template, DEFAULT_BODY)
    return {"config": config, "simulated_profile": profile, "templates": home.templates_dir(),
            "default_template": template}
