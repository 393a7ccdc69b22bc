"""One Attempt: run the agent once on a fixed target, verify the contract, commit. No Dagster here.

The verifier decides completion, never the provider: provider error + contract pass is complete.
"""

from __future__ import annotations

import os
import platform
import signal
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from awp_pipelines.core.decisions import amendments
from awp_pipelines.core.decisions.agent_control import (
    ControlHandle,
    Directive,
    control_section,
    iteration_of,
    open_iteration,
    read_directive,
)
from awp_pipelines.core.decisions.budget import Budget, BudgetExhausted, Spend
from awp_pipelines.core.decisions.operator_control import (
    SessionMarker,
    Steering,
    note_verdict,
    session_running,
    steer_prompt,
)
from awp_pipelines.core.engine import orphans
from awp_pipelines.core.engine.attempt_record import (
    AttemptIdentity,
    AttemptRecord,
    AttemptResult,
    AttemptTarget,
    SpendTotal,
    attempt_usage,
)
from awp_pipelines.core.engine.cleantree import DirtyTree, ensure_clean
from awp_pipelines.core.engine.confirmation import confirm
from awp_pipelines.core.engine.interrupts import Interrupted, Stop
from awp_pipelines.core.engine.provenance import credential_source, provenance
from awp_pipelines.core.engine.provisioning import execution_profile, provision, unstartable
from awp_pipelines.core.engine.remote import RemoteTrees
from awp_pipelines.core.isolation.profile import ExecutionProfile
from awp_pipelines.core.isolation.record import IsolationRecord
from awp_pipelines.core.packet.bounds import human_duration
from awp_pipelines.core.packet.model.control import AgentControlConfig
from awp_pipelines.core.packet.model.simulate import SimulateSpec
from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.packet.prices import load_prices
from awp_pipelines.core.packet.providers_config import AccountBinding
from awp_pipelines.core.planning.plan import PromptPlan
from awp_pipelines.core.planning.preflight import tree_problem
from awp_pipelines.core.providers.base import ProviderAdapter, ProviderOutcome, ProviderRequest, ProviderUsage
from awp_pipelines.core.providers.environment import awp_shim, scoped_home
from awp_pipelines.core.records.agent_files import control_folder
from awp_pipelines.core.records.attempt_lifecycle import Transition, cause_of, transition
from awp_pipelines.core.records.committer import CommitError, CommitResult, commit_targets
from awp_pipelines.core.records.diffs import WORK_TREE, DiffSource, attempt_diff, diff_path, write_diff
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import CLI_CONFIRMATION_CLASSES, FailureEnvelope
from awp_pipelines.core.records.git_tamper import Metadata, read_metadata, tamper_message, tampered
from awp_pipelines.core.records.redact import Redactor, redact
from awp_pipelines.core.records.secret_scan import SecretInWork
from awp_pipelines.core.records.transcript import Counters
from awp_pipelines.core.records.workspace import (
    RepoState,
    WorkspaceError,
    changed_since,
    discard_changes,
    head,
    restore_checkpoint,
    save_checkpoint,
    snapshot,
)
from awp_pipelines.core.verifiers.context import VerifyContext
from awp_pipelines.core.verifiers.engine import run_contract
from awp_pipelines.core.verifiers.report import VerifierReport


@dataclass(frozen=True)
class ControlSetup:
    """An agent-controlled Attempt: where its request and progress files go, and which iteration it is."""

    config: AgentControlConfig
    folder: Path
    iteration: int
    previous: Directive | None = None  # the last iteration's directive (a rejected finish's unmet items)


def control_setup(config: AgentControlConfig, state_root: Path, identity: AttemptIdentity, earlier_modes: list[str],
                  previous: Directive | None) -> ControlSetup | None:
    """The agent-control setup of an Attempt of an agent-controlled packet; files under the state folder."""
    if not config.enabled:
        return None
    folder = control_folder(state_root, identity.packet_run, identity.prompt, identity.attempt_id)
    return ControlSetup(config, folder, iteration_of(earlier_modes, identity.mode), previous)


@dataclass(frozen=True)
class AttemptSpec:
    packet: Packet
    prompt: Prompt
    plan: PromptPlan
    identity: AttemptIdentity
    target: AttemptTarget
    commit: bool = True
    verify_first: bool = False  # Prompt Runner's pre-flight verify: a contract already met starts no session
    simulate: SimulateSpec | None = None
    repair_text: str | None = None
    secret_env: Mapping[str, str] | None = None
    restore: Mapping[str, str] | None = None  # repo → checkpoint of the AgentRun's previous Attempt
    spent_before: Spend = Spend()  # the packet run's recorded spend before this Attempt
    # The caps that bind this Attempt and what was spent before it: the running spend is checked against them
    # at each usage event of the session, which stops at a crossing (`budget_exhausted`). None: no caps.
    budget: Budget | None = None
    # The AgentRun's operator folder (operator_control.py): a person's steers reach the session through it and its
    # amendments change the contract verified. None (bare engine tests): nobody steers.
    operator: Path | None = None
    control: ControlSetup | None = None
    # Everything the Attempt hands out passes this; build it with Redactor.for_catalog(catalog) so every
    # account's credential is known. The account's own `secret_env` values are always added.
    redactor: Redactor | None = None
    # The state folder: the agent gets HOME=<it>/homes/<account> and `awp` from <it>/bin on its PATH. None (bare
    # engine tests): the operator's HOME, and the shim beside the control files when there are any.
    agent_root: Path | None = None
    # Remote repos among the targets: their commits and checkpoints are pushed (remote.py); None: all local.
    trees: RemoteTrees | None = None
    # Refused before its agent starts (no target of the chain is available): recorded, the agent never runs.
    refusal: FailureEnvelope | None = None

    def boundary_redactor(self) -> Redactor:
        """Every secret value the Attempt knows: the catalog's, its own credentials, the runner's secret-named
        variables (a verifier or an agent run with `isolation: none` sees the runner's environment, and prints
        what it sees). What leaves the Attempt passes it, and no commit or checkpoint holds one (secret_scan.py)."""
        return (self.redactor or Redactor()).with_values((self.secret_env or {}).values()).with_runner_secrets()


def agent_places(spec: AttemptSpec) -> tuple[Path | None, Path | None]:
    """(scoped HOME, folder of the `awp` shim) of the Attempt's agent."""
    if spec.agent_root is not None:
        return (scoped_home(spec.agent_root / "homes", spec.target.account, spec.target.provider),
                awp_shim(spec.agent_root / "bin"))
    return None, awp_shim(spec.control.folder / "bin") if spec.control is not None else None


def repair_instructions(last: AttemptRecord, note: str | None = None) -> str | None:
    """Prompt Runner's repair context: the last runtime error and the remaining verifier failures; and the
    note of the person who asked for the repair, if any."""
    parts = [f"Note from the person who asked for this repair: {redact(note)}"] if note else []
    failure = last.failure or last.provider_failure
    if failure:
        parts.append(f"Last runtime error ({failure.failure_class}): {failure.message}")
    if last.verifier is not None and not last.verifier.passed:
        parts.append("Remaining verifier failures:\n\n" + last.verifier.unmet_text())
    return "\n\n".join(parts) or None


def prompt_text(spec: AttemptSpec) -> str:
    text = spec.prompt.body
    if spec.repair_text:
        text += ("\n\n## Repair Instructions\n\nContinue from the current state of the workspace. Fix only the "
                 "unmet items below; do not redo finished work.\n\n" + spec.repair_text)
    return text


def execute_attempt(spec: AttemptSpec, adapter: ProviderAdapter, sink: EventSink,
                    cancel_on: tuple[type[BaseException], ...] = (), stop: Stop | None = None) -> AttemptRecord:
    """One Attempt; the record it returns has passed the boundary redactor as a whole. `cancel_on`: what the
    caller's runtime raises when a person cancels the run (Dagster's interrupt, under a run worker); the
    Attempt then ends cancelled, with its partial work checkpointed. `stop`: the process's stop on a signal
    (interrupts.py); it cuts into the agent's session, is honoured again after it and after verification,
    and the Attempt ends `interrupted`, its partial work checkpointed."""
    redactor = spec.boundary_redactor()
    started, clock = _now(), time.monotonic()
    trail = [transition("created", spec.target.reason)]
    repos = spec.packet.repos
    targets = {t.name: Path(t.path) for t in spec.plan.repos}
    trail.append(transition("provisioning", "restoring the AgentRun's checkpoint" if spec.restore else
                            "snapshotting the work tree"))
    profile = execution_profile(spec.target.provider_kind, adapter, spec.plan.isolation, _account(spec))
    unstarted = spec.refusal or unstartable(profile) or _missing_tree(targets)
    if unstarted is not None:  # never falls back to running the agent unsandboxed
        return redactor.model(_refused(spec, sink, started, clock, trail, unstarted,
                                       IsolationRecord(profile=profile, node=platform.node())))
    try:
        # Without commits (`--no-commit`) the trees keep each Attempt's work by design: nothing to protect.
        set_aside = ensure_clean(targets, spec.packet.manifest.dirty_tree, spec.identity.attempt_id) \
            if spec.commit else {}
    except DirtyTree as err:
        return redactor.model(_refused(spec, sink, started, clock, trail,
                                       FailureEnvelope.for_class("dirty_tree", str(err))))
    for repo, sha in set_aside.items():
        sink.tree_set_aside(repo, sha)
    restored = _restore(targets, spec.restore or {})
    before = snapshot(targets)
    checkpoint = {name: state.head for name, state in before.items()}
    metadata = read_metadata(targets)  # compared after the session, before AWP's first git command on the trees
    if spec.verify_first and (spec.identity.number, spec.identity.mode) == (1, "run"):
        met = _verify(spec, profile, metadata)
        if met is not None and met.passed:
            sink.verifier_completed(True, [])
            trail.append(transition("terminal", "completed: the contract already passed (verify first); no session"))
            return redactor.model(_record(spec, sink, started, clock, checkpoint, restored,
                                          ProviderOutcome.from_sink(sink, None, None), 0, redactor.model(met),
                                          "completed", None, False, [], {}, trail, set_aside))
    handle = _open_control(spec)
    if handle is not None:
        sink.add_secret(handle.token)
    text = prompt_text(spec) + (control_section(handle, spec.control.config, spec.control.previous)
                                if handle and spec.control else "")
    sink.prompt_sent(text)  # first in the transcript: what the agent was asked
    fault_pause("before_agent")
    home, tools = agent_places(spec)
    request = ProviderRequest(
        prompt_text=text, cwd=Path(spec.plan.cwd), repos={n: r.path for n, r in repos.items()},
        default_repo=spec.plan.repos[0].name if spec.plan.repos else spec.packet.default_repo,
        # What the Attempt hands its agent; the one builder (providers/environment.agent_env) adds the rest.
        env={**(spec.secret_env or {}), **(handle.env() if handle else {}),
             **orphans.marker(spec.packet.root, targets.values(), spec.identity.attempt_id)},
        home=home, tools=tools, model=spec.target.model, effort=spec.target.effort,
        timeout_ms=spec.plan.bounds.run_deadline_ms, idle_timeout_ms=spec.plan.bounds.idle_timeout_ms,
        attempt_number=spec.identity.number, mode=spec.identity.mode,
        session_id=None, simulate=spec.simulate,
        account=_account(spec),
        permission_mode=spec.plan.permission_mode, allowed_tools=tuple(spec.plan.allowed_tools),
        max_turns=spec.plan.max_turns, system_prompt=spec.plan.system_prompt,
        append_system_prompt=spec.plan.append_system_prompt)
    provisioned = provision(profile, adapter, request, kind=spec.target.provider_kind, trees=targets,
                            control=handle.request_path.parent if handle else None, state_root=spec.agent_root,
                            packet_root=spec.packet.root, network=spec.plan.network,
                            attempt_id=spec.identity.attempt_id)
    steering = Steering(spec.operator, spec.identity.attempt_id, spec.prompt.recovery.max_steers) \
        if spec.operator is not None else None
    request = replace(request, sandbox=provisioned.sandbox, steer_waiting=steering.poll if steering else None)
    isolation = provisioned.record
    trail.append(transition("running", f"{spec.target.provider}/{spec.target.model}; {isolation.line()}"))

    def stopped(failure: FailureEnvelope, ran: tuple[ProviderOutcome, int] | None = None) -> AttemptRecord:
        """Ended before its verdict (cancelled, or the process was asked to stop): keep the partial work,
        record the Attempt."""
        outcome, resumes = ran or (ProviderOutcome.from_sink(sink, failure, None), 0)
        guarded = _tamper_failure(metadata, targets)
        if guarded is not None:
            return left_alone(guarded, outcome, resumes)
        sink.run_failed(failure)
        fault_pause("stopping")
        trail.append(transition("checkpointing", f"saving the partial work of an Attempt that ended "
                                f"{failure.failure_class}"))
        wip, refused = _checkpoint(spec, targets, before, redactor)
        if refused is not None:
            return left_alone(refused, outcome, resumes)
        trail.append(transition("terminal", f"provider_failed: {failure.failure_class}",
                                cause_of(failure.failure_class) or "cancellation"))
        record = _record(spec, sink, started, clock, checkpoint, restored, outcome, resumes, None,
                         "provider_failed", failure, bool(wip), [], wip, trail, set_aside, isolation=isolation)
        return redactor.model(record.model_copy(update={"diff_file": store_diff(sink, targets, record, redactor),
                                                        "steers": steering.steers if steering else []}))

    def left_alone(failure: FailureEnvelope, outcome: ProviderOutcome, resumes: int,
                   report: VerifierReport | None = None) -> AttemptRecord:
        """The trees' git metadata was tampered with, or the work holds a secret: the Attempt ends with the
        trees as the agent left them, nothing committed, checkpointed, reset or read into a stored diff."""
        sink.run_failed(failure)
        cls = failure.failure_class
        trail.append(transition("terminal", f"{cls}: {failure.message}", cause_of(cls)))
        result: AttemptResult = "tree_tampered" if cls == "tree_tampered" else "secret_in_work"
        return redactor.model(_record(spec, sink, started, clock, checkpoint, restored, outcome,
                                      resumes, report, result, failure, True, [], {}, trail, set_aside,
                                      isolation=isolation))

    sink.on_usage = spend_guard(spec)
    try:
        with stop.cut_in() if stop is not None else nullcontext(), _steerable(spec):
            outcome, resumes = _run_with_resume(adapter, request, sink, spec.prompt.recovery.resume_attempts,
                                                steering)
    except cancel_on as err:  # the UI terminated the run mid-session
        return stopped(FailureEnvelope.for_class("user_cancelled", f"cancelled: {type(err).__name__}"))
    except Interrupted as err:  # the process got SIGINT or SIGTERM mid-session
        return stopped(_interrupted(err.signum, "the agent's session"))
    except BudgetExhausted as err:  # the session's own spend reached a cap: stopped there, like a signal
        return stopped(FailureEnvelope.for_class("budget_exhausted", f"{err.reason}; the session was stopped "
                                                 "mid-Attempt", provider_code="budget_exhausted"))
    finally:
        sink.on_usage = None
        provisioned.close(sink)
    outcome = confirm(outcome, spec.plan.cli_confirmation, spec.target.model, sink)
    fault_pause("after_agent")
    if stop is not None and stop.signum is not None:  # the agent ended as the signal came: verify nothing
        return stopped(_interrupted(stop.signum, "the end of the agent's session"), (outcome, resumes))
    guarded = _tamper_failure(metadata, targets)
    if guarded is not None:
        return left_alone(guarded, outcome, resumes)
    changed = bool(changed_since(before, snapshot(targets)))
    sink.files_changed_since(targets, checkpoint)
    report = _verify(spec, profile, metadata)
    if report is not None:
        report = redactor.model(report)  # a verifier prints what it sees: an echoed key, a token in argv
        sink.verifier_completed(report.passed, [item.label for item in report.failures + report.faults])
    result, failure = completion(outcome, report)
    if stop is not None and stop.signum is not None and result != "completed":
        # Stopped while verifying (its commands were killed): their verdict says nothing. A contract that
        # passed is committed: the work is done, and a commit is quick and local.
        return stopped(_interrupted(stop.signum, "verification"), (outcome, resumes))
    fault_pause("after_verify")
    guarded = _tamper_failure(metadata, targets)  # again: the verifier ran the tree's code
    if guarded is not None:
        return left_alone(guarded, outcome, resumes, report)
    commits: list[CommitResult] = []
    trail.append(transition("checkpointing", "committing the work" if result == "completed" else
                            "saving the partial work"))
    if result == "completed" and spec.commit:
        try:
            commits = _commit(spec, targets, redactor, checkpoint)
            for info in commits:
                sink.commit_created(info.repo, info.status, info.sha)
        except CommitError as err:
            if err.failure_class in ("secret_in_work", "tree_tampered"):
                return left_alone(FailureEnvelope.for_class(err.failure_class, redactor(err.message)), outcome,
                                  resumes, report)
            result, failure = "commit_failed", FailureEnvelope.for_class("commit_failed", redactor(str(err)))
    fault_pause("after_commit")
    wip, refused = _checkpoint(spec, targets, before, redactor) if result != "completed" else ({}, None)
    if refused is not None:
        return left_alone(refused, outcome, resumes, report)
    # The directive is read only once the contract passed and the work is committed.
    directive = _directive(spec, handle, profile) if result == "completed" and handle else None
    cls = failure.failure_class if failure else None
    trail.append(transition("terminal", result + (f": {cls}" if cls else "")
                            + (f"; {directive.line()}" if directive else ""),
                            cause_of(cls) or ("human_wait" if directive and directive.outcome == "blocked" else None)))
    record = _record(spec, sink, started, clock, checkpoint, restored, outcome, resumes,
                     report, result, failure, changed, commits, wip, trail, set_aside, isolation=isolation)
    # One pass over the whole record: failure messages, provider failures, verifier items, prompt text.
    return redactor.model(record.model_copy(update={"control": directive,
                                                    "diff_file": store_diff(sink, targets, record, redactor),
                                                    "steers": steering.steers if steering else [],
                                                    "amendments": amendments.read(spec.operator)}))


def store_diff(sink: EventSink, targets: Mapping[str, Path], record: AttemptRecord, redactor: Redactor) -> str | None:
    """Store the Attempt's diff beside its events: each repo from its checkpoint to the commit made, else to the
    checkpoint of the partial work, else (no commit asked) to the work tree as it is. A diff that cannot be
    read leaves the Attempt as it is: its page then says none was stored."""
    if getattr(sink, "path", None) is None:
        return None
    made = {c.repo: c.sha for c in record.commits if c.sha}
    repos: dict[str, tuple[Path, str | None, str, DiffSource]] = {}
    try:
        for name, path in targets.items():
            base = record.checkpoint.get(name)
            if name in made:
                repos[name] = (path, base, str(made[name]), "commit")
            elif name in record.wip:
                repos[name] = (path, base, record.wip[name], "checkpoint")
            else:
                repos[name] = (path, base, WORK_TREE, "work_tree")
        file = diff_path(sink.path)
        write_diff(file, attempt_diff(record.identity.attempt_id, repos, redactor))
    except (WorkspaceError, OSError):
        return None
    return str(file)


def _missing_tree(targets: Mapping[str, Path]) -> FailureEnvelope | None:
    """A work tree that is not there (or in no repository) fails every Attempt the same way before its agent starts:
    one deterministic refusal, never a retry (a run launched from the UI has no `awp run` preflight)."""
    for name, path in targets.items():
        problem = tree_problem(path)
        if problem is not None:
            return FailureEnvelope.for_class("launch_failed", f"work tree '{name}': {problem[0]} ({problem[1]})",
                                             deterministic=True)
    return None


def _refused(spec: AttemptSpec, sink: EventSink, started: str, clock: float, trail: list[Transition],
             failure: FailureEnvelope, isolation: IsolationRecord | None = None) -> AttemptRecord:
    """Provisioning refused (a person's changes in the tree, a sandbox that cannot start, no target available):
    the agent never started, the tree is as the person left it."""
    sink.run_failed(failure)
    cls = failure.failure_class
    trail.append(transition("terminal", f"{cls}: {failure.message}", cause_of(cls)))
    heads = {t.name: head(t.path) for t in spec.plan.repos if tree_problem(Path(t.path)) is None}
    outcome = ProviderOutcome.from_sink(sink, None, None)
    result: AttemptResult = "dirty_tree" if cls == "dirty_tree" else "provider_failed"
    return _record(spec, sink, started, clock, heads, {}, outcome, 0, None, result, failure,
                   False, [], {}, trail, isolation=isolation)


def _open_control(spec: AttemptSpec) -> ControlHandle | None:
    if spec.control is None:
        return None
    ident = spec.identity
    return open_iteration(spec.control.folder, ident.packet_run, ident.prompt, spec.control.iteration)


def _directive(spec: AttemptSpec, handle: ControlHandle, profile: ExecutionProfile) -> Directive:
    """The iteration's directive; a `finish` stands only if the packet's completion contract passes."""
    assert spec.control is not None
    config = spec.control.config
    directive = read_directive(handle, config)
    if directive.outcome != "finish" or config.completion_verify is None:
        return directive
    report = run_contract(config.completion_verify, verify_context(spec, profile))
    if report.passed:
        return directive
    return directive.model_copy(update={"outcome": "finish_rejected", "unmet": report.unmet_text()})


def _account(spec: AttemptSpec) -> AccountBinding | None:
    return spec.plan.account_bindings.get(spec.target.account) if spec.target.account else None


def _record(spec: AttemptSpec, sink: EventSink, started: str, clock: float,
            checkpoint: dict[str, str | None], restored: dict[str, str], outcome: ProviderOutcome, resumes: int,
            report: VerifierReport | None, result: AttemptResult, failure: FailureEnvelope | None, changed: bool,
            commits: list[CommitResult], wip: dict[str, str], trail: list[Transition],
            set_aside: Mapping[str, str] | None = None, *, isolation: IsolationRecord | None = None) -> AttemptRecord:
    usage = attempt_usage(outcome.usage, spec.target.model)
    spent = spec.spent_before + Spend(usage.cost_usd or 0.0, usage.input_tokens + usage.output_tokens)
    return AttemptRecord(
        identity=spec.identity, target=spec.target, role=spec.plan.agent, prompt_name=spec.prompt.name,
        workspace={t.name: str(Path(t.path)) for t in spec.plan.repos}, cwd=spec.plan.cwd, checkpoint=checkpoint,
        started_at=started, ended_at=_now(), duration_s=round(time.monotonic() - clock, 3), result=result,
        failure=failure, provider_failure=outcome.failure, session_id=outcome.session_id, resumes=resumes,
        usage=usage, packet_run_spend=SpendTotal(cost_usd=spent.cost_usd, tokens=spent.tokens),
        messages=outcome.messages, verifier=report, workspace_changed=changed,
        commits=commits, events_file=str(sink.path) if getattr(sink, "path", None) else None, wip=wip,
        restored=restored, set_aside=dict(set_aside or {}), transitions=trail, isolation=isolation,
        provenance=provenance(profile=spec.plan.profile, permission_mode=spec.plan.permission_mode,
                              allowed_tools=spec.plan.allowed_tools, asked=spec.target.model,
                              kind=spec.target.provider_kind,
                              sandboxed=bool(isolation and isolation.grants is not None),
                              reported=outcome.reported_model, key_source=sink.counters.key_source,
                              credential=credential_source(spec.target.provider_kind, _account(spec),
                                                           spec.secret_env or {})))


def _interrupted(signum: int, during: str) -> FailureEnvelope:
    return FailureEnvelope.for_class("interrupted", f"the process was stopped by {signal.Signals(signum).name} "
                                     f"during {during}")


def fault_pause(point: str, scope: str = "") -> None:
    """Fault injection for the crash tests: `AWP_FAULT_PAUSE=after_commit:5` sleeps 5 s there, so a test can
    watch for the point in the events and kill the process inside the window; `before_attempt@02:5` only
    where the caller's `scope` is 02 (a prompt id). Unset, it does nothing."""
    name, _, seconds = os.environ.get("AWP_FAULT_PAUSE", "").partition(":")
    if name in (point, f"{point}@{scope}") and seconds.replace(".", "", 1).isdigit():
        time.sleep(float(seconds))


def _restore(targets: Mapping[str, Path], restore: Mapping[str, str]) -> dict[str, str]:
    """Start from the previous Attempt's partial work, replayed onto each repo's current HEAD. A checkpoint
    that no longer applies is left out of the record's `restored`: that Attempt started from HEAD."""
    return {repo: sha for repo, sha in restore.items() if repo in targets and restore_checkpoint(targets[repo], sha)}


def _checkpoint(spec: AttemptSpec, targets: Mapping[str, Path], before: Mapping[str, RepoState],
                redactor: Redactor) -> tuple[dict[str, str], FailureEnvelope | None]:
    """Save an unfinished Attempt's partial work under refs/awp/checkpoints/<agent run>/<attempt>, then
    leave each repo clean, so no other prompt commits it. Its tree was clean before the Attempt (the
    precondition), or held only the AgentRun's checkpoint, which the new one includes; without commits it may
    have held earlier work, which is never discarded. Work holding a secret AWP knows is neither saved nor
    discarded: the `secret_in_work` failure names where, for a person to remove it."""
    ident = spec.identity
    saved = {}
    refused: list[str] = []
    for name, repo in targets.items():
        ref = f"refs/awp/checkpoints/{ident.agent_run}/{ident.attempt_id}"
        try:
            sha = save_checkpoint(repo, before[name].head, ref, f"AWP checkpoint {ident.attempt_id}",
                                  redactor.literals)
            if sha:
                saved[name] = sha
                if spec.commit or not before[name].dirty:
                    discard_changes(repo)
        except SecretInWork as err:
            refused.append(str(SecretInWork(name, err.hits)))
        except WorkspaceError:
            continue
    if spec.trees is not None and saved:
        spec.trees.push_checkpoints({n: targets[n] for n in saved}, ident.agent_run)
    failure = FailureEnvelope.for_class("secret_in_work", redactor("; ".join(refused))) if refused else None
    return saved, failure


def _tamper_failure(before: Mapping[str, Metadata], targets: Mapping[str, Path]) -> FailureEnvelope | None:
    """`tree_tampered` when a tree's git metadata differs from its reading before the session."""
    changed = tampered(before, read_metadata(targets))
    return FailureEnvelope.for_class("tree_tampered", tamper_message(changed)) if changed else None


def spend_guard(spec: AttemptSpec) -> Callable[[Counters], None] | None:
    """The sink's usage hook for the Attempt's caps: it raises `BudgetExhausted` once the running spend (the
    provider's reported cost, else the price table's estimate, as the record will count it) reaches one."""
    budget = spec.budget
    if budget is None or (budget.packet is None and budget.prompt is None):
        return None
    prices, model = load_prices(), spec.target.model

    def check(counters: Counters) -> None:
        usage = attempt_usage(ProviderUsage(**counters.tokens, cost_usd=counters.cost_usd,
                                            cost_reported=counters.cost_reported), model, prices)
        over = budget.after(Spend(usage.cost_usd or 0.0, usage.input_tokens + usage.output_tokens)).exhausted()
        if over is not None:
            raise BudgetExhausted(over)

    return check


def _steerable(spec: AttemptSpec) -> AbstractContextManager[None]:
    """The session marker a person's `awp control steer` finds this Attempt by, while its session runs."""
    if spec.operator is None:
        return nullcontext()
    ident = spec.identity
    return session_running(spec.operator, SessionMarker(packet_run=ident.packet_run, prompt=ident.prompt,
                                                        attempt=ident.attempt_id, provider=spec.target.provider,
                                                        pid=os.getpid(), started_at=_now()))


def _steered(adapter: ProviderAdapter, request: ProviderRequest, sink: EventSink, outcome: ProviderOutcome,
             steering: Steering | None, started: float) -> ProviderOutcome | None:
    """A person's steer, taken: the same provider session resumed with it (a fresh one carrying it when the
    provider named none). None when no steer waits (or each waiting was refused), or the deadline passed."""
    if steering is None:
        return None
    seen = len(steering.steers)
    steer = steering.take()
    for refused in steering.steers[seen:]:
        if not refused.delivered:  # past max_steers: on record, and the session goes on unsteered
            sink.steer_received(refused.text, refused.author, refused.id, refused.lane, False, refused.refused)
    if steer is None:
        return None
    sink.steer_received(steer.text, steer.author, steer.id, steer.lane)
    left_ms = request.timeout_ms - int((time.monotonic() - started) * 1000)
    if left_ms <= 0:
        return None
    if outcome.session_id:
        sink.resume_started(outcome.session_id, prompt=steer.text)
        return adapter.resume(replace(request, session_id=outcome.session_id, prompt_text=steer_prompt(steer),
                                      mode="resume", timeout_ms=left_ms), sink)
    return adapter.run(replace(request, prompt_text=request.prompt_text + "\n\n" + steer_prompt(steer),
                               timeout_ms=left_ms), sink)


def _run_with_resume(adapter: ProviderAdapter, request: ProviderRequest, sink: EventSink,
                     budget: int, steering: Steering | None = None) -> tuple[ProviderOutcome, int]:
    """Recoverable transport failures resume the same provider session, up to `resume_attempts`. The deadline
    (`request.timeout_ms`) is the Attempt's: each resume gets what is left of it, and none starts once it passed.
    A person's steer resumes it too (with the steer as its prompt), outside that budget: `max_steers` bounds it."""
    started = time.monotonic()
    outcome = adapter.run(request, sink)
    resumes = 0
    while True:
        steered = _steered(adapter, request, sink, outcome, steering, started)
        if steered is not None:
            outcome = steered
            continue
        if outcome.failure is None or not outcome.failure.resumeable or resumes >= budget:
            break
        left_ms = request.timeout_ms - int((time.monotonic() - started) * 1000)
        if left_ms <= 0:
            failure = FailureEnvelope.for_class(
                "transport_timeout", f"the Attempt's deadline ({human_duration(request.timeout_ms)}, from `timeout`) "
                f"passed after {resumes} resume(s); not resumed again (last: {outcome.failure.message[:200]})",
                provider_code="deadline")
            sink.run_failed(failure)
            return ProviderOutcome.from_sink(sink, failure, outcome.session_id), resumes
        resumes += 1
        sink.resume_started(outcome.session_id)
        resumed = replace(request, session_id=outcome.session_id, prompt_text="Continue", mode="resume",
                          timeout_ms=left_ms)
        outcome = adapter.resume(resumed, sink)
    return outcome, resumes


def _verify(spec: AttemptSpec, profile: ExecutionProfile,
            metadata: Mapping[str, Metadata] | None = None) -> VerifierReport | None:
    """The contract the AgentRun is held to now: the prompt's, with a person's amendments applied."""
    contract = amendments.enforced(spec.prompt.front.verify, amendments.read(spec.operator))
    if contract is None or contract.is_empty():
        return None
    report = run_contract(contract, verify_context(spec, profile, metadata))
    if spec.operator is not None:
        note_verdict(spec.operator, spec.identity.attempt_id, report.passed)
    return report


def verify_context(spec: AttemptSpec, profile: ExecutionProfile,
                   metadata: Mapping[str, Metadata] | None = None) -> VerifyContext:
    """Where the Attempt's contracts are checked: their commands in the verifier's sandbox unless the agent
    itself ran with `isolation: none` (a check never gets more rights than the agent whose code it runs),
    with the state folder hidden; its git clauses only after the tamper check against `metadata` (the trees'
    git metadata before the session) passed."""
    targets = {t.name: Path(t.path) for t in spec.plan.repos}

    def guard() -> str | None:
        failure = _tamper_failure(metadata, targets) if metadata is not None else None
        return failure.message if failure is not None else None

    return VerifyContext(packet_root=spec.packet.root, repos={n: r.path for n, r in spec.packet.repos.items()},
                         default_repo=spec.packet.default_repo, prompt_id=spec.prompt.id,
                         isolation="none" if profile.isolation == "none" else "sandbox",
                         state=(spec.agent_root,) if spec.agent_root is not None else (), git_guard=guard)


def completion(outcome: ProviderOutcome, report: VerifierReport | None) -> tuple[AttemptResult, FailureEnvelope | None]:
    """Prompt Runner's completion table: the verifier decides, never the provider. A fault outranks all; a
    passed contract completes even after a provider error; with no contract the provider's word stands."""
    if report is not None and report.faults:
        fault = report.faults[0]
        cls = fault.fault or "verifier_fault"
        return "verifier_fault", FailureEnvelope.for_class(cls, f"{fault.label}: {' '.join(fault.details[:3])}")
    if outcome.failure is not None and outcome.failure.failure_class in CLI_CONFIRMATION_CLASSES:
        # Another model than the one asked for (or an unknown one) did the work: its provenance is wrong.
        return "provider_failed", outcome.failure
    if report is not None and report.passed:
        return "completed", None
    if outcome.failure is not None:
        return "provider_failed", outcome.failure
    if report is None:
        return "completed", None
    return "verification_failed", None


def _commit(spec: AttemptSpec, targets: Mapping[str, Path], redactor: Redactor,
            bases: Mapping[str, str | None]) -> list[CommitResult]:
    ident, target = spec.identity, spec.target
    # `awp blame` reads these back: one short line each; an empty value (no Dagster run) is left out.
    reason = " ".join(target.reason.split())
    reason = reason if len(reason) <= 120 else reason[:119] + "…"
    trailers = {"AWP-Packet": ident.packet, "AWP-Prompt": ident.prompt, "AWP-Agent-Run": ident.agent_run,
                "AWP-Attempt": ident.attempt_id, "AWP-Mode": ident.mode, "AWP-Reason": reason,
                "AWP-Provider": target.provider, "AWP-Account": target.account or "none",
                "AWP-Model": target.model, "AWP-Dagster-Run": ident.dagster_run or ""}
    results = commit_targets(targets, spec.plan.commit_message, trailers, redactor, bases)
    if spec.trees is not None:
        spec.trees.push_commits({n: targets[n] for n, r in results.items() if r.status == "committed"})
    return list(results.values())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
