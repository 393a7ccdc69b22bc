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


# What `make test-fast` leaves out (every other target runs it): a test of about 0.3 s or more on 2 busy cores,
# because it opens a Dagster instance, starts bubblewrap, a subprocess or a real timer, or reads the whole tree.
# Keys: a module, `module::test` (every case) or `module::*[id]` (each test's case `id`), with why. The oldest-Dagster
# leg still runs them. Measured with `bash bench/fast_loop.sh` (its --durations list names new candidates).
HEAVY: dict[str, str] = {
    # Processes with real deadlines and timers: agents that hang, stream or are steered, the verifier's sandbox.
    "tests/providers/test_attempt_bounds.py": "agent processes held to their real deadlines",
    "tests/providers/test_stream_redaction.py": "a long agent stream through redaction",
    "tests/providers/test_fake_clis.py":
        "a fake CLI process per case (the adapters' parsing stays: tests/providers/test_<cli>.py)",
    "tests/providers/test_process_and_classify.py::test_stderr_lines_reach_their_handler_which_can_stop_the_session":
        "a process group stopped and killed",
    "tests/providers/test_process_and_classify.py::test_the_handler_can_stop_the_session_and_the_group_is_killed":
        "a process group stopped and killed",
    "tests/providers/test_agent_environment.py": "agent processes, each with its environment",
    "tests/providers/test_model_lists.py::test_an_opencode_probe_asks_zens_or_openrouters_list_without_a_key":
        "an HTTP probe's client start",
    "tests/providers/test_doctor.py::test_a_stored_cooldown_shows_and_blocks_when_every_account_rests":
        "an embedded Dagster instance",
    "tests/core/engine/test_operator_control.py::test_relax_lets_the_running_agent_run_complete_with_the_relaxed_"
    "item_recorded": "an agent process steered while it runs",
    "tests/core/engine/test_attempt_cancel.py::test_a_spend_cap_of_one_cent_stops_a_running_attempt_with_its_"
    "checkpoint": "an agent process stopped mid-run",
    "tests/verifiers/test_verify_sandbox.py::test_a_check_ends_with_a_killed_runner": "a verifier command killed",
    "tests/verifiers/test_verify_sandbox.py::test_nothing_the_check_starts_outlives_it": "a verifier's children killed",
    "tests/verifiers/test_verify_sandbox.py::test_pytest_on_the_agents_own_tests_passes_inside": "pytest in bubblewrap",
    "tests/verifiers/test_verify_commands.py::test_regenerates_restores_after_a_timeout": "a verifier timeout",
    "tests/verifiers/test_verify_commands.py::test_timeout_is_a_verifier_timeout_and_kills_the_command":
        "a verifier timeout",
    "tests/verifiers/test_verify_compat_contracts.py": "every compat packet's contracts run, prompt after prompt",
    "tests/isolation/test_sandbox_unavailable.py": "bubblewrap's failure modes, each in a process",
    "tests/isolation/test_trusted_config.py::test_the_sandbox_meets_its_limits": "bubblewrap under its limits",
    "tests/isolation/test_egress_limits.py::test_a_client_that_sends_nothing_is_dropped_and_an_idle_tunnel_is_cut":
        "the egress proxy's idle timeouts",
    "tests/isolation/test_egress_limits.py::test_connections_past_the_cap_are_refused_and_a_freed_slot_serves_again":
        "the egress proxy's connection cap",
    # Subprocesses that import Dagster or the package, or race.
    "tests/dagster_compat/test_upstream_repros.py": "bare-Dagster reproductions, each in a subprocess",
    "tests/dagster_compat/test_dagster_compat.py::test_awp_pipelines_imports_whole_when_every_private_name_is_"
    "renamed_upstream": "the package imported in a subprocess with Dagster's private names renamed",
    "tests/api/test_sdk.py::test_the_package_root_is_the_sdk_and_no_submodule_shadows_it": "fresh interpreters",
    "tests/api/test_sdk.py::test_importing_the_sdk_imports_nothing_of_dagster": "a fresh interpreter",
    "tests/core/packet/test_malformed_packets.py::test_the_installed_awp_binary_prints_one_line_at_any_terminal_width":
        "the installed `awp` at several widths",
    "tests/core/packet/test_parse_cache.py::test_concurrent_loads_leave_one_whole_cache_file": "racing processes",
    "tests/core/packet/test_hostile_yaml.py::test_libyaml_and_the_pure_loader_read_every_packet_file_alike":
        "every packet file, read twice",
    "tests/core/handoff/test_handoff.py::test_plan_shows_the_hand_off_and_awp_handoff_refuses_what_it_cannot_hand_"
    "off": "the CLI on a packet run",
    "tests/core/handoff/test_handoff.py::test_a_push_the_remote_refuses_fails_before_any_api_call": "a refused push",
    "tests/reliability/test_run_lock.py::test_awp_repair_takes_the_packets_lock_too": "two CLI processes",
    "tests/reliability/test_instance_init.py::test_a_folder_with_its_own_dagster_yaml_is_used_as_it_is":
        "an instance opened from its own dagster.yaml in a subprocess",
    "tests/providers/test_probe.py::test_a_cli_probe_fails_when_the_executable_is_missing_and_passes_when_it_answers":
        "CLI probes as processes",
    "tests/core/engine/test_remote_trees.py::test_hosts_follow_the_packet_runs_branch_and_a_stale_host_cannot_push_"
    "over_it": "git pushes between hosts' clones",
    "tests/test_suite_rules.py::test_under_ci_a_skipped_test_fails_and_says_why": "pytest run in pytest",
    "tests/reliability/test_canary_dump.py::test_the_code_location_refuses_a_key_in_a_verify_argv_without_echoing_it":
        "the code location loaded in a subprocess",
    "tests/reliability/test_canary_side_doors.py": "every command on a packet run it refuses",
    "tests/reliability/test_pg_outage.py": "an embedded Dagster instance and its pools",
    "tests/orchestration/test_deploy_kit.py::test_the_celery_instance_launches_runs_as_tasks_that_outlive_the_"
    "longest_attempt": "the Celery kit's instance",
    "tests/orchestration/test_deploy_kit.py::test_the_docker_instance_runs_each_run_in_a_container_of_the_awp_"
    "image": "the Docker kit's instance",
    # An embedded Dagster instance (SQLite) per test; the ledger's contract runs fast on memory.
    "tests/ledger/test_ledger_contract.py::*[sqlite]": "an embedded Dagster instance per case; [memory] stays",
    "tests/ledger/test_asset_job_runs.py": "an embedded Dagster instance",
    "tests/ledger/test_attempt_claim.py": "an embedded Dagster instance",
    "tests/ledger/test_embedded_storage.py": "an embedded Dagster instance",
    "tests/ledger/test_heartbeat.py": "an embedded Dagster instance",
    "tests/ledger/test_instance_choice.py": "an embedded Dagster instance and the CLI",
    "tests/ledger/test_kv_prefixed.py": "an embedded Dagster instance",
    "tests/ledger/test_liveness.py": "an embedded Dagster instance",
    "tests/ledger/test_lost_commits.py": "an embedded Dagster instance",
    "tests/ledger/test_packet_index.py": "an embedded Dagster instance",
    "tests/ledger/test_pool_claims.py": "an embedded Dagster instance",
    "tests/ledger/test_start_marker.py::test_markers_of_both_forms_are_read_by_the_history_and_the_attempt_lookup":
        "an embedded Dagster instance",
    "tests/cli/test_accounts_cmd.py": "an embedded Dagster instance and the CLI",
    "tests/core/records/test_live_dagster.py": "a Dagster run in process",
    "tests/orchestration/sensors/test_housekeeping.py": "an embedded Dagster instance per sweep",
    "tests/orchestration/sensors/test_sensor_cursor.py": "an embedded Dagster instance and its runs",
    "tests/ledger/test_tick_instance.py": "an embedded Dagster instance",
    "tests/ledger/test_scenarios_on_memory.py": "the real compute, engine and sensor on real git work trees (no "
                                                "Dagster run)",
    "tests/ledger/test_ledger_made_once.py::test_the_factory_hands_out_the_ledger_type": "an embedded Dagster instance",
    "tests/tools/test_import_graph.py::test_the_command_prints_json_and_refuses_a_folder_that_is_no_package":
        "two Python processes",
    # The whole tree read, or many generated examples.
    "tests/ledger/test_ledger_boundary.py::test_no_module_outside_the_ledger_implementation_imports_a_state_module":
        "parses every module of the package",
    "tests/orchestration/test_definitions.py::test_layering_edges_point_the_right_way": "every module's imports",
    "tests/orchestration/test_definitions.py::test_no_import_loop_counting_the_package_root": "every module's imports",
    "tests/ledger/test_ledger_boundary.py::test_only_the_dagster_layer_imports_dagster_compat_and_only_what_is_"
    "classified": "parses every module of the package",
    "tests/orchestration/test_definitions.py::test_pure_core_imports_nothing_from_dagster": "every core module",
    "tests/core/decisions/test_policy.py::test_every_agent_run_terminates_whatever_the_provider_does":
        "generated provider behaviours",
    "tests/core/records/test_redact.py::test_a_literal_is_redacted_wherever_it_is_whatever_its_characters":
        "300 generated examples",
    "tests/verifiers/test_verify_items_report.py::test_check_names_are_unique_valid_and_short":
        "200 generated contracts",
}


def heavy(nodeid: str) -> bool:
    """Whether the test `nodeid` is in HEAVY: by its module, its function or its case id."""
    base, _, case = nodeid.partition("[")
    module = base.split("::")[0]
    return module in HEAVY or base in HEAVY or (bool(case) and f"{module}::*[{case}" in HEAVY)
