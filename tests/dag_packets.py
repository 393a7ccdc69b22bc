"""Packets of independent prompts on the simulated provider, for the parallel-run tests and `make bench`.

Each prompt targets one repo (a real git repo made here), waits `delay_ms` as a slow agent would, writes
`<prompt id>.md` and is verified by that file existing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for argv in (["init", "--quiet", "--initial-branch=main"], ["config", "user.name", "AWP Test"],
                 ["config", "user.email", "test@awp.invalid"]):
        subprocess.run(["git", "-C", str(path), *argv], check=True, capture_output=True)
    (path / "README.md").write_text("# repo\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(path), "add", "README.md"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(path), "commit", "--quiet", "-m", "Add README"], check=True, capture_output=True)


def write_dag_packet(root: Path, repo_of: dict[str, str], delay_ms: int = 0,
                     depends_on: dict[str, list[str]] | None = None, name: str = "dag") -> Path:
    """A packet at `root`: prompt id → its one target repo. Prompts depend on nothing unless `depends_on`
    says so (without `depends_on` a packet is a chain)."""
    depends_on = depends_on or {}
    repos = sorted(set(repo_of.values()))
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}", "provider: simulated", "model: simulated-demo", "timeout: 10m", "repos:"]
    lines += [f"  {repo}: {{path: ./repos/{repo}}}" for repo in repos]
    (root / "packet.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for repo in repos:
        init_repo(root / "repos" / repo)
    for pid, repo in repo_of.items():
        deps = ", ".join(f'"{d}"' for d in depends_on.get(pid, []))
        (root / "prompts" / f"{pid}_p{pid}.prompt.md").write_text(f"""---
id: "{pid}"
name: Prompt {pid}
targets: [{repo}]
depends_on: [{deps}]
verify:
  files_exist: [{{repo: {repo}, path: {pid}.md}}]
simulate:
  attempts:
    - messages: ["writing {pid}.md"]
      delay_ms: {delay_ms}
      writes:
        - path: {pid}.md
          text: "done {pid}"
---
Write {pid}.md.
""", encoding="utf-8")
    return root
