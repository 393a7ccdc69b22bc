"""The deployment kit under deploy/: the Helm values render to the run pod's Job with dagster-k8s's own Python
API (no cluster, no helm binary), and the Celery and Docker instance configs load in Dagster."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from dagster import DagsterInstance
from dagster._core.test_utils import instance_for_test
from dagster_k8s.job import DagsterK8sJobConfig, UserDefinedDagsterK8sConfig, construct_dagster_k8s_job
from repo_paths import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"


def _values() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())


def _run_job(values: dict[str, Any]) -> dict[str, Any]:
    """The Job the K8sRunLauncher builds for one run, from the chart's run launcher values (camelCase there,
    the launcher's snake_case config here, as the chart's instance ConfigMap maps them)."""
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    [user_code] = values["dagster-user-deployments"]["deployments"]
    image = f"{user_code['image']['repository']}:{user_code['image']['tag']}"
    config = DagsterK8sJobConfig(
        job_image=image, dagster_home="/opt/dagster/dagster_home", image_pull_policy=launcher["imagePullPolicy"],
        instance_config_map="awp-dagster-instance", postgres_password_secret=values["global"]["postgresqlSecretName"],
        env_secrets=[s["name"] for s in launcher["envSecrets"]], env_vars=launcher["envVars"],
        volumes=launcher["volumes"], volume_mounts=launcher["volumeMounts"], labels=launcher["labels"])
    run_config = launcher["runK8sConfig"]
    user = UserDefinedDagsterK8sConfig(
        pod_template_spec_metadata=run_config["podTemplateSpecMetadata"], pod_spec_config=run_config["podSpecConfig"],
        job_spec_config=run_config["jobSpecConfig"], container_config=run_config["containerConfig"])
    job = construct_dagster_k8s_job(config, ["dagster", "api", "execute_run", "{}"], "dagster-run-0123abcd",
                                    user_defined_k8s_config=user, pod_name="dagster-run-0123abcd",
                                    component="run_worker")
    return job.to_dict()


def test_one_pod_per_run_mounts_the_work_volume_where_the_work_root_points() -> None:
    values = _values()
    assert values["runLauncher"]["type"] == "K8sRunLauncher"  # not the step-per-pod executor: steps share trees
    spec = _run_job(values)["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert [v["name"] for v in spec["volumes"]] == ["awp-work"]
    assert spec["volumes"][0]["ephemeral"]["volume_claim_template"]["spec"]["access_modes"] == ["ReadWriteOnce"]
    assert {m["name"]: m["mount_path"] for m in container["volume_mounts"]} == {"awp-work": "/work"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["AWP_WORK_ROOT"] == "/work"
    assert spec["security_context"]["run_as_non_root"] is True


def test_the_run_pod_can_start_each_attempts_sandbox_and_is_not_privileged() -> None:
    """bubblewrap in the run pod: its own user namespace, the namespace syscalls and mount allowed, an unmasked
    /proc (so the sandbox mounts a fresh one); no capability, no privilege, no escalation."""
    spec = _run_job(_values())["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert spec["host_users"] is False
    assert spec["security_context"]["seccomp_profile"] == {"type": "Unconfined", "localhost_profile": None}
    assert spec["security_context"]["app_armor_profile"]["type"] == "Unconfined"
    context = container["security_context"]
    assert context["proc_mount"] == "Unmasked" and context["allow_privilege_escalation"] is False
    assert not context.get("privileged") and not context.get("capabilities")


def test_each_agent_account_has_a_secret_of_its_own_and_no_secret_is_inline() -> None:
    values = _values()
    job = _run_job(values)
    [container] = job["spec"]["template"]["spec"]["containers"]
    secrets = [source["secret_ref"]["name"] for source in container["env_from"] if source.get("secret_ref")]
    assert [s for s in secrets if s.startswith("awp-account-")] == ["awp-account-claude-main",
                                                                    "awp-account-codex-main"]
    assert "awp-git-push" in secrets
    values_text = (DEPLOY / "helm" / "values.yaml").read_text()
    assert "KEY=" not in values_text and "TOKEN=" not in values_text  # credentials live in Secrets only


def test_the_run_pod_is_never_evicted_restarted_or_resumed() -> None:
    values = _values()
    job = _run_job(values)
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "false"
    assert job["spec"]["backoff_limit"] == 0
    monitoring = values["dagsterDaemon"]["runMonitoring"]
    assert monitoring["enabled"] and monitoring["maxResumeRunAttempts"] == 0
    assert monitoring["startTimeoutSeconds"] >= 300  # minutes: image pulls on a busy cluster
    tag = values["dagster-user-deployments"]["deployments"][0]["image"]["tag"]
    assert tag != "latest"


def _instance_config(name: str) -> dict[str, Any]:
    """A deploy/ instance config with SQLite storage in place of PostgreSQL (the launcher is what is tested)."""
    config = yaml.safe_load((DEPLOY / name / "dagster.yaml").read_text())
    config.pop("storage")
    return config


def _never_resumes(instance: DagsterInstance) -> None:
    """Run monitoring on, no resume (a second agent on half-done work), slots of a dead run freed."""
    assert instance.run_monitoring_enabled
    assert instance.run_monitoring_max_resume_run_attempts == 0
    assert instance.get_settings("run_monitoring")["free_slots_after_run_end_seconds"] > 0


def test_the_celery_instance_launches_runs_as_tasks_that_outlive_the_longest_attempt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster_celery.launcher import CeleryRunLauncher

    from awp_pipelines.core.packet.bounds import derive_bounds

    monkeypatch.setenv("AWP_CELERY_BROKER", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("AWP_CELERY_BACKEND", "redis://127.0.0.1:6379/1")
    with instance_for_test(overrides=_instance_config("celery")) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, CeleryRunLauncher)
        conf = launcher.celery.conf
        assert conf.broker_url == "redis://127.0.0.1:6379/0"
        longest_attempt_s = derive_bounds(None).timeout_ms / 1000  # `timeout` unset: the longest there is
        assert conf.broker_transport_options["visibility_timeout"] > longest_attempt_s
        assert conf.worker_prefetch_multiplier == 1
        assert conf.task_track_started  # else a running task reads PENDING and run monitoring fails its run
        assert not conf.result_backend.startswith("rpc")
        assert instance.run_monitoring_start_timeout_seconds >= 300
        _never_resumes(instance)


def test_the_docker_instance_runs_each_run_in_a_container_of_the_awp_image(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.orchestration.docker_launcher import SandboxDockerRunLauncher

    monkeypatch.setenv("AWP_IMAGE", "awp-pipelines:test")
    with instance_for_test(overrides=_instance_config("docker")) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, SandboxDockerRunLauncher)
        # What bubblewrap needs in the container, and nothing that would make the container privileged.
        kwargs = launcher.container_kwargs
        assert kwargs["security_opt"] == ["seccomp=unconfined", "apparmor=unconfined", "no-new-privileges:true"]
        assert not {"privileged", "cap_add", "pid_mode", "userns_mode"} & set(kwargs)
        assert launcher.image == "awp-pipelines:test"
        assert launcher.networks == ["host"]
        assert "AWP_WORK_ROOT=/work" in launcher.env_vars
        assert "AWP_PAGE_URL" in launcher.env_vars  # the runs' awp/page links lead to `awp serve`
        assert not [v for v in launcher.env_vars if "=" in v and "PASSWORD" in v.split("=")[0]]
        _never_resumes(instance)
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "USER awp" in dockerfile and "install_real_clis.sh" in dockerfile and " bubblewrap " in dockerfile
