"""Packet hygiene: a profile not on this machine, a template not found, a secret written down, keys never sent."""

from __future__ import annotations

from pathlib import Path

from awp_pipelines import profile as home
from awp_pipelines.authoring import find_template
from awp_pipelines.model.prompt import INERT_KEYS
from awp_pipelines.packet import Prompt
from awp_pipelines.redact import find_secrets

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
                f"profile '{name}' is not in {home.profiles_dir()}; the packet's own settings apply",
                hint=f"create it with `awp profile new {name}` on this machine, or drop `profile:`")


def _template_missing(ctx: LintContext, name: str, where: Where) -> None:
    if find_template(ctx.packet.root, name) is None:
        ctx.add("missing_template", where, f"template '{name}' not found",
                hint=f"looked in {ctx.packet.root / 'templates'} and {home.templates_dir()}")


def _secrets_written(ctx: LintContext, file: Path) -> None:
    for line, kind in find_secrets(file.read_text(encoding="utf-8")):
        ctx.findings.append(finding(
            "secret_in_packet", file, f"a {kind.replace('_', ' ')} is written on line {line}", line=line,
            hint="remove and rotate it; an account's credential_env names the variable that holds it"))
