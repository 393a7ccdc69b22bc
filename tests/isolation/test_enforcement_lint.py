"""`awp lint` reports a permission setting nobody enforces: allowed_tools on Codex, OpenCode or a `command`
agent (none has a tool allow-list, nor can the sandbox make one), `plan` on OpenCode or `command` without the
sandbox; and says when an agent runs unsandboxed. What the provider or the sandbox enforces passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from awp_pipelines.core.lint import lint_packet
from awp_pipelines.core.packet.providers_config import BUILTIN, Catalog, ProviderSpec

CATALOG = Catalog(providers={**BUILTIN.providers, "agent": ProviderSpec(kind="command", command="true"),
                             "bare": ProviderSpec(kind="command", command="true", isolation="none")})


def _kinds(tmp: Path, **settings: object) -> dict[str, str]:
    (tmp / "packet.yaml").write_text(yaml.safe_dump({"name": "p", "timeout": "10m", **settings}))
    (tmp / "prompts").mkdir(exist_ok=True)
    (tmp / "prompts" / "01_a.prompt.md").write_text("---\nverify:\n  files_exist: [a.txt]\n---\nDo it.\n")
    return {f.kind: f.severity for f in lint_packet(tmp, CATALOG).findings
            if f.kind in ("permission_not_enforced", "tools_not_enforced", "isolation_none")}


@pytest.mark.parametrize(("settings", "expected"), [
    ({"provider": "codex", "model": "gpt-5", "allowed_tools": ["Read"]}, {"tools_not_enforced": "error"}),
    ({"provider": "opencode", "model": "opencode/x", "allowed_tools": ["Read"]}, {"tools_not_enforced": "error"}),
    ({"provider": "agent", "model": "m", "allowed_tools": ["Read"]}, {"tools_not_enforced": "error"}),
    ({"provider": "claude", "model": "haiku", "allowed_tools": ["Read"], "permission_mode": "plan"}, {}),
    ({"provider": "codex", "model": "gpt-5", "permission_mode": "plan"}, {}),
    ({"provider": "opencode", "model": "opencode/x", "permission_mode": "plan"}, {}),  # the sandbox enforces it
    ({"provider": "agent", "model": "m", "permission_mode": "plan"}, {}),
    ({"provider": "agent", "model": "m", "permission_mode": "bypass", "isolation": "none"},
     {"isolation_none": "warning"}),
    ({"provider": "agent", "model": "m", "permission_mode": "auto"}, {"permission_not_enforced": "error"}),
    ({"provider": "bare", "model": "m", "permission_mode": "plan"},
     {"permission_not_enforced": "error", "isolation_none": "warning"}),
])
def test_lint_reports_what_nobody_enforces(tmp_path: Path, settings: dict[str, object],
                                           expected: dict[str, str]) -> None:
    assert _kinds(tmp_path, **settings) == expected
