"""Which end-to-end scenarios `make test` leaves to `make test-all` (issue 32: the suite in 15 minutes on 2 cores).

`make test` keeps one representative scenario per launch path (awp run, the UI, the daemon, Celery, Docker) and
per risk (a kill -9, an outage, an attack, a real CLI); the decisions themselves are tested below it (the core,
the ledger on memory, SQLite and PostgreSQL). A scenario here is another end-to-end variant of something `make
test` covers at its own layer: it still runs, by `make test-all` (everything) or `make test-extended` (these
alone). Each is named by its test function (a parametrized one: `name[id]` for one case), with what still
covers it in `make test`.

    AWP_TEST_EXTENDED unset: deselected   "1": kept   "only": only these
"""

from __future__ import annotations

import os

EXTENDED: dict[str, str] = {
    # Celery: the runbook's "Materialize all" (tests/e2e/test_deploy_runbook.py) and the attack table through the
    # Celery launcher stay.
    "test_a_long_attempt_on_a_celery_worker_is_not_failed_by_run_monitoring":
        "run monitoring's settings in the kit: tests/orchestration/test_deploy_kit.py",
    "test_a_worker_killed_mid_attempt_is_failed_by_its_silent_heartbeat_and_the_retry_continues_on_the_other":
        "a dead run worker failed by housekeeping under the daemon: tests/daemon/test_daemon_dead_run_worker.py; "
        "the heartbeat's deadline: tests/ledger/test_heartbeat.py",
    "test_prompts_on_remote_repos_run_as_celery_tasks_on_two_hosts_and_push_their_commits":
        "remote work trees pushed and continued on another host: tests/e2e/test_remote_tree_runs.py",
    # Docker: "Materialize all" in containers and the attack table in the sandbox stay.
    "test_a_killed_container_is_noticed_and_the_retry_completes":
        "a dead run worker under the daemon: tests/daemon/test_daemon_dead_run_worker.py",
    "test_the_attack_table_through_the_docker_launcher[none]":
        "the table without the sandbox, in process: tests/e2e/test_sandbox_attacks.py",
    # The daemon: one scenario per decision it drives stays.
    "test_a_rate_limited_account_falls_back_through_the_sensor_and_no_account_runs_two_attempts[sqlite]":
        "its [postgres] case; the embedded SQLite under the daemon: test_ui_launch_of_the_demo_…[sqlite]",
    "test_after_ctrl_c_the_daemon_launches_nothing_and_awp_run_packet_run_completes_it":
        "a stopped packet run gets no launch: tests/ledger/test_decisions_on_memory.py; Ctrl-C then resume in "
        "process: tests/e2e/test_agent_run_truth.py; the UI's cancel under the daemon: test_daemon_stop.py",
    "test_an_agent_that_repeats_twice_then_finishes_runs_three_iterate_attempts_through_the_sensor":
        "iterations under the daemon: test_a_command_agent_steers_its_iterations_under_the_daemon; repeat twice "
        "then finish in process: tests/e2e/test_agent_control_runs.py",
    # A kill -9 and a plain rerun: every kill point with `--packet-run` stays (tests/reliability/test_kill9.py).
    "test_kill_9_then_plain_rerun_leaves_no_packet_run_behind[agent done, before verify]":
        "the same point with --packet-run in test_kill9.py; the plain rerun at two other points",
    "test_kill_9_then_plain_rerun_leaves_no_packet_run_behind[retry backoff]":
        "the same point with --packet-run in test_kill9.py; the plain rerun at two other points",
    # Rotation: each policy's choice is a pure function (tests/test_rotation.py); one policy end to end stays.
    "test_awp_run_uses_the_accounts_each_rotation_gives[between_attempts]": "tests/test_rotation.py; [fill_first]",
    "test_awp_run_uses_the_accounts_each_rotation_gives[round_robin]": "tests/test_rotation.py; [fill_first]",
    "test_awp_run_uses_the_accounts_each_rotation_gives[least_used]": "tests/test_rotation.py; [fill_first]",
    # The benches' daemon modes: each script's own run stays at a tiny size (tests/bench/test_bench_scripts.py).
    "test_each_bench_of_the_suite_runs_at_its_quick_size[dag-daemon]": "[dag]; the daemon's launches: tests/daemon",
    "test_each_bench_of_the_suite_runs_at_its_quick_size[limit-daemon]": "[limit]; fallback under the daemon: "
                                                                         "tests/daemon/test_daemon_runs.py",
    # A bare-Dagster reproduction of an upstream bug (docs/upstream.md): a minute of a daemon on 200 jobs.
    "test_the_reproduction_shows_the_dagster_bug[daemon_refetches_unchanged_jobs.py]":
        "the workaround's own figures: bench/sensor_daemon_cpu.py (its tiny run in tests/bench/test_bench_scripts.py)",
}


def tier() -> str:
    """`default`, `all` or `only`, from AWP_TEST_EXTENDED."""
    value = os.environ.get("AWP_TEST_EXTENDED", "").strip().lower()
    return {"": "default", "0": "default", "1": "all", "true": "all", "only": "only"}.get(value, "all")


def extended(name: str) -> bool:
    """Whether the test item `name` (its function name, with `[id]` when parametrized) is in the extended tier."""
    return name in EXTENDED or name.split("[")[0] in EXTENDED
