"""Packet hygiene: a profile not on this machine, a template not found, a secret written down, keys never sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from awp_pipelines.core.packet import home_profile as home
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.model.prompt import INERT_KEYS
from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.packet.templates import find_template
from awp_pipelines.core.records.redact import find_secrets

from .context import LintContext
from .report import finding
from .where import Where


def lint_manifest(ctx: LintContext) -> None:
    """The manifest's profile and prompt_template, and secrets in the manifest file."""
    manifest = Where(ctx.packet.doc, ())
    _profile_missing(ctx, manifest.at("profile"))
    if ctx.packet.manifest.prompt_template:
        _template_missing(ctx, ctx.packet.manifest.prompt_template, manifest.at("prompt_template"))
    _secrets_written(ctx, ctx.packet.manifest_file)
    _references_missing(ctx, manifest)
    _packet_in_target_tree(ctx, manifest)


def _packet_in_target_tree(ctx: LintContext, manifest: Where) -> None:
    """The packet's own files inside a tree its agents write: the sandbox keeps them read-only and hides `.awp/`,
    but what an Attempt commits there (a moved folder, a new prompt) is read by the next run as the packet."""
    root = ctx.packet.root.resolve()
    for name, repo in ctx.packet.repos.items():
        tree = Path(repo.path).resolve()
        if root == tree or root.is_relative_to(tree):
            ctx.add("packet_in_target_tree", manifest.at("repos"),
                    f"repo '{name}' ({tree}) holds this packet's own files (packet.yaml, prompts/, resources/): "
                    "its agents work in the tree that defines what AWP runs next",
                    hint="move the packet out of the tree (e.g. beside it) and point `repos: {name: {path: ...}}` at "
                         "the tree")


def _references_missing(ctx: LintContext, manifest: Where) -> None:
    """A remote repo's `reference` cache that this machine lacks: clones here fetch every object instead."""
    for name, spec in ctx.packet.manifest.repo_map().items():
        reference = spec.remote.reference if spec.remote else None
        if reference and not (ctx.packet.root / reference).is_dir():
            ctx.add("reference_missing", manifest.at("repos"),
                    f"repo '{name}': reference repository {reference} is not on this machine; clones here "
                    "fetch everything from the remote", hint="create it (git clone --mirror URL PATH) or drop "
                    "`reference:`")


def lint_prompt(ctx: LintContext, prompt: Prompt) -> None:
    """A prompt's template, its inert front-matter keys and secrets in its file."""
    where = Where(prompt.doc, ())
    if prompt.front.template:
        _template_missing(ctx, prompt.front.template, where.at("template"))
    for key in INERT_KEYS:
        if key in prompt.front.model_fields_set:
            ctx.add("inert_front_matter_key", where.at(key), f"'{key}' is never sent to the agent",
                    hint="write the reading list in the prompt body")
    _secrets_written(ctx, prompt.file)


def _profile_missing(ctx: LintContext, where: Where) -> None:
    name = ctx.packet.manifest.profile
    if name and home.load_profile(name) is None:
        ctx.add("profile_missing", where,
                f"profile '{name}' is not in {' or '.join(map(str, home.profile_dirs()))}; the packet's own settings "
                "apply",
                hint=f"create it with `awp profile new {name}` on this machine, or drop `profile:`")


def _template_missing(ctx: LintContext, name: str, where: Where) -> None:
    if find_template(ctx.packet.root, name) is None:
        ctx.add("missing_template", where, f"template '{name}' not found",
                hint=f"looked in {ctx.packet.root / 'templates'} and {home.templates_dir()}")


_SECRET_HINT = "remove and rotate it; an account's credential_env names the variable that holds it"


def _secrets_written(ctx: LintContext, file: Path) -> None:
    for line, kind in secrets_in_file(file):
        ctx.findings.append(finding("secret_in_packet", file, _secret_message(kind, line), line=line,
                                    hint=_SECRET_HINT))


def secrets_in_file(file: Path) -> list[tuple[int, str]]:
    """(line, kind) of each secret written in `file`: what lint reports as `secret_in_packet`."""
    return find_secrets(file.read_text(encoding="utf-8"))


def secrets_in_packet(packet: Packet) -> Iterator[tuple[Path, int, str]]:
    """(file, line, kind) of each secret in the manifest and the prompt files, in lint's order."""
    for file in (packet.manifest_file, *(prompt.file for prompt in packet.prompts)):
        for line, kind in secrets_in_file(file):
            yield file, line, kind


def refuse_secrets(packet: Packet) -> None:
    """`awp run` (and any launcher) refuses a packet that lint finds a secret in: a PacketError at the first
    one, with its file and line (exit 2). The secret itself is never echoed."""
    for file, line, kind in secrets_in_packet(packet):
        raise PacketError(file, f"refusing to run: {_secret_message(kind, line)}", line=line, key=None,
                          hint=_SECRET_HINT + "; `awp lint` lists them all")
    for prompt in packet.prompts:  # a prompt's file name becomes its asset key and is stored with every run
        for _, kind in find_secrets(prompt.file.name.replace("_", " ")):  # `01_sk-…`: `_` hides a word start
            raise PacketError(prompt.file.parent, f"refusing to run: the file name of prompt {prompt.id} holds a "
                              f"{kind.replace('_', ' ')}", hint="rename the file")


def _secret_message(kind: str, line: int) -> str:
    return f"a {kind.replace('_', ' ')} is written on line {line}"
