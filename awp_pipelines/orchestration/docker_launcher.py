"""The run launcher of `deploy/docker/dagster.yaml`: Dagster's DockerRunLauncher, whose run containers can start
each Attempt's bubblewrap sandbox (core/isolation/bwrap.py). docs/deploy.md, "Docker".

bwrap, started by the non-root run worker, needs three things Docker refuses a container by default; measured
with the private dockerd of tests/e2e/test_docker_runs.py, each alone is not enough:
- the user-namespace syscalls (clone/unshare with CLONE_NEWUSER, mount, pivot_root), which Docker's default
  seccomp profile refuses: `security_opt: [seccomp=unconfined]` in the launcher's container_kwargs;
- mount under AppArmor's docker-default profile, on hosts that have AppArmor: `apparmor=unconfined`;
- a fresh /proc for the sandbox's pid namespace (so the agent sees none of the runner's processes): the kernel
  refuses to mount a procfs in a user namespace while the container's own /proc has paths masked over, and
  Docker masks some (`/proc/kcore`, `/proc/keys`, ...). This class creates the container with no masked or
  read-only /proc paths, as `docker run --security-opt systempaths=unconfined` does: docker-py's
  container_kwargs cannot say it. Nothing else changes: no capability is added, the container is not
  privileged, and `no-new-privileges` holds.
"""

from __future__ import annotations

from typing import Any

from dagster_docker import DockerRunLauncher
from dagster_docker.container_context import DockerContainerContext

# What Docker's `systempaths=unconfined` sets: the container's /proc and /sys as the kernel shows them.
UNMASKED_SYSTEM_PATHS: dict[str, list[str]] = {"MaskedPaths": [], "ReadonlyPaths": []}


class SandboxDockerRunLauncher(DockerRunLauncher):
    """DockerRunLauncher whose run containers have their /proc unmasked, so bubblewrap can mount a fresh one."""

    def _get_client(self, container_context: DockerContainerContext) -> Any:  # a docker.DockerClient
        client = super()._get_client(container_context)
        create = client.api.create_container

        def create_unmasked(*args: Any, **kwargs: Any) -> Any:
            kwargs["host_config"] = {**(kwargs.get("host_config") or {}), **UNMASKED_SYSTEM_PATHS}
            return create(*args, **kwargs)

        client.api.create_container = create_unmasked
        return client
