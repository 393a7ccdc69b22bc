"""The public SDK: what the `awp` commands do, as typed Python functions.

    import awp_pipelines as awp  # the package root re-exports these functions
    result = awp.run("assets/demo", on_progress=lambda event: print(event.line()))
    print(result.ok, awp.status("assets/demo").state)

The CLI is a shell over these functions: it parses flags, calls one of them and prints what it returns.
Bad input raises `PacketError` (file, line, key, hint), as the CLI's exit code 2 says it. Nothing here
imports Dagster until a function that needs an instance is called, so `load`, `lint`, `plan` and `verify`
stay light.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.decisions.amendments import Amendment
from awp_pipelines.core.decisions.operator_control import SteerRequest
from awp_pipelines.core.engine.attempt_record import AttemptRecord, Usage, total_usage
from awp_pipelines.core.engine.progress import AttemptEnded, Listener, ProgressEvent, RunPlanned
from awp_pipelines.core.engine.run_stream import EventListener, EventTail, PacketRunEnded, RunEvent
from awp_pipelines.core.engine.runlock import packet_lock
from awp_pipelines.core.engine.status_report import StatusReport
from awp_pipelines.core.lint import LintReport, lint_loaded, lint_packet, refuse_broken_references, refuse_secrets
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import Packet, load_packet, normalize_id
from awp_pipelines.core.packet.providers_config import Catalog, load_catalog
from awp_pipelines.core.planning.plan import Overrides, PacketPlan, PlanContext, build_plan
from awp_pipelines.core.planning.preflight import refuse_missing_trees, refuse_unknown_providers
from awp_pipelines.core.planning.selection import (
    Selection,
    ended_explanation,
    nothing_selected,
    selection_from_flags,
    unmet_upstream,
    upstream_warnings,
)
from awp_pipelines.core.planning.selection import remaining as remaining_of
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.core.verifiers.context import VerifyContext
from awp_pipelines.core.verifiers.engine import run_contract
from awp_pipelines.core.verifiers.report import VerifierReport

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from awp_pipelines.orchestration.compile.translator import PacketTranslator
    from awp_pipelines.orchestration.driver.in_process import PromptOutcome
    from awp_pipelines.orchestration.ledger.ledger import Ledger

    Translator = PacketTranslator | str | None  # a translator, or its dotted path (`pkg.module.Class`)

__all__ = ["HandoffResult", "Overrides", "RepairResult", "RunResult", "Select", "handoff", "lint", "load", "plan",
           "repair", "run", "status", "verify"]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Select:
    """Which prompts: explicit ids, a --from/--through range, a phase, or those not completed yet."""

    ids: Sequence[str] = ()
    from_id: str | None = None
    through: str | None = None
    phase: str | None = None
    remaining: bool = False  # the prompts not yet completed in the newest packet run (or `packet_run`)
    ignore_deps: bool = False  # run them even where an upstream prompt is not completed in the packet run


@dataclass
class RunResult:
    """What a run ended with: each selected prompt's outcome and usage, and the packet run to continue."""

    packet: str
    packet_run: str
    outcomes: list[PromptOutcome]
    usage: dict[str, Usage] = field(default_factory=dict)  # prompt id → summed over its AgentRun's Attempts
    stopped_by: int | None = None  # the signal that came after the last Attempt, if one did
    explanation: str | None = None  # why nothing ran, or why what is unfinished cannot go on
    warnings: list[str] = field(default_factory=list)  # changed prompts of a resume, chosen ones without upstream
    handoff: list[HandoffResult] = field(default_factory=list)  # the pull requests opened or updated, once it ended

    @property
    def ok(self) -> bool:
        return bool(self.outcomes) and all(o.completed for o in self.outcomes)

    @property
    def total_usage(self) -> Usage:
        return total_usage(self.usage.values())


@dataclass
class RepairResult:
    """The repair Attempt's record, and its AgentRun's state after it."""

    packet: str
    packet_run: str
    prompt: str
    record: AttemptRecord
    state: str
    reason: str
    ok: bool  # the repair is the record and it completed the prompt


def load(packet: PathLike | Packet) -> Packet:
    """The packet folder (packet.yaml or Prompt Runner's prompt_runner_packet.md), parsed and validated."""
    return packet if isinstance(packet, Packet) else load_packet(Path(packet))


def catalog(providers: PathLike | None = None) -> Catalog:
    """providers.yaml (`providers`), else ./resources/providers.yaml, else the built-ins."""
    if providers is not None and not Path(providers).is_file():
        raise PacketError(Path(providers), "no such providers file", hint="pass an existing providers.yaml")
    return load_catalog(Path(providers) if providers is not None else None)


def lint(packet: PathLike, *, providers: PathLike | None = None) -> LintReport:
    """Authoring hazards, without running anything. A packet that does not load is a report whose `invalid`
    finding says where (no exception)."""
    return lint_packet(Path(packet), catalog(providers))


def plan(packet: PathLike | Packet, select: Select | Sequence[str] = (), *, overrides: Overrides | None = None,
         providers: PathLike | None = None, instance: PathLike | None = None, packet_run: str | None = None,
         preflight: bool = False, translator: Translator = None) -> PacketPlan:
    """The fully resolved plan of the selected prompts, each value with the layer that set it. `instance`
    is where `remaining` looks for completed prompts (under `translator`'s asset keys, as `run` stores them).
    A packet holding a secret is refused, as `run` refuses it; every account's credential value in the plan
    is masked. `preflight` also refuses what else `run` would refuse (an unknown provider) before anything
    starts."""
    chosen = _planned(packet, select, overrides, providers, instance, preflight, executables=False,
                      packet_run=packet_run, translator=translator)
    # A plan is printed and piped: every account's credential value is masked in it, as a run masks them.
    return Redactor.for_catalog(chosen.catalog).model(chosen.plan)


def run(packet: PathLike | Packet, select: Select | Sequence[str] = (), *, overrides: Overrides | None = None,
        providers: PathLike | None = None, instance: PathLike | None = None, packet_run: str | None = None,
        recover: bool = True, commit: bool = True, state_dir: PathLike | None = None,
        simulate_overlay: PathLike | None = None, verbose: bool = False, parallel: int | None = None,
        on_progress: Listener | None = None, translator: Translator = None, verify_first: bool = False,
        keep_going: bool = False, skip_preflight: bool = False, on_event: EventListener | None = None) -> RunResult:
    """Run the selected prompts on a local Dagster instance (`instance`, default <packet>/.awp/dagster),
    with retries, fallbacks and repairs in process (`recover`), as `awp run` does; `packet_run` continues
    one. `on_progress` receives each Attempt's start and end and each launch as values (progress.py).
    `parallel`: how many prompts may run at once (default 8; 1: one at a time): those with no dependency path
    between them, on disjoint work trees, within the account leases. `translator`: the asset keys and
    work-tree pools (translator.py), as the code location's; status and `remaining` must be given the same.
    `verify_first`: a prompt whose contract already passes completes with no agent session (Prompt Runner's
    pre-flight verify). `keep_going`: a failed prompt does not stop the ones after it that do not depend on it
    (by `depends_on`; the order alone is no dependency), which run in order; the packet run still ends failed.
    `skip_preflight`: no check of the agent CLIs on PATH, root refusals or logins before the run.
    `on_event` receives the run's activity as typed values as it happens (run_stream.py): each Attempt's start and
    end, the agent's messages, tool calls and token reports, and last the packet run's end.

    One runner per packet (a second raises PacketError naming the holder). SIGINT/SIGTERM stop it in order:
    `RunStopped` (its `packet_run` goes on with `packet_run=`). A failed database raises StorageUnavailable."""
    from awp_pipelines.core.engine.interrupts import stopping
    from awp_pipelines.core.isolation.notice import isolation_notices
    from awp_pipelines.core.packet.providers_config import default_catalog_file
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compile.translator import load_translator, translator_path
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from awp_pipelines.orchestration.compute.step_executor import DEFAULT_PARALLEL
    from awp_pipelines.orchestration.driver.in_process import Progress, RunOptions, run_packet
    from awp_pipelines.orchestration.driver.parallel import JobSource, can_overlap, start_steps_early
    from awp_pipelines.orchestration.views.handoff import hand_off_packet_run
    from awp_pipelines.orchestration.views.standing import agent_run_records

    translator = load_translator(translator)
    chosen = _planned(packet, select, overrides, providers, instance, True, executables=True, packet_run=packet_run,
                      translator=translator, skip_preflight=skip_preflight)
    loaded, found, planned, context = chosen.packet, chosen.catalog, chosen.plan, chosen.context
    if chosen.nothing_left is not None:  # --remaining found the packet run done: nothing to run, not an error
        return RunResult(loaded.name, chosen.packet_run or "", [], explanation=chosen.nothing_left)
    runtime = AwpResource(state_dir=str(state_dir) if state_dir else None, commit=commit, verify_first=verify_first,
                          simulate_overlay=str(Path(simulate_overlay).resolve()) if simulate_overlay else None)
    chosen.warnings[:0] = isolation_notices({p.id: p.isolation for p in planned.prompts},
                                            runtime.state_root(loaded.root))
    width = parallel or DEFAULT_PARALLEL
    compiled = packet_assets(loaded, found, runtime, translator, plan_context=context, parallel=width,
                             plan=chosen.whole)
    # What a step process of a parallel run needs to build this same job again (it is spawned).
    catalog_file = Path(providers) if providers is not None else default_catalog_file()
    source = JobSource(str(loaded.root), str(catalog_file.resolve()) if catalog_file else None,
                       asdict(context.overrides), runtime.settings(), width,
                       translator_path(translator), uuid.uuid4().hex) if width > 1 else None
    selected = [p.id for p in planned.prompts]
    if source is not None and can_overlap(compiled.binding, selected):
        start_steps_early(source)  # the step processes' server starts while the instance opens
    if on_progress is not None:
        on_progress(RunPlanned(tuple((p.id, p.name) for p in planned.prompts), tuple(chosen.warnings)))
    stream = _Streaming(runtime.state_root(loaded.root) / "events", on_event, on_progress) if on_event else None
    with packet_lock(loaded, runtime.state_root(loaded.root)), stopping() as stop, stream or nullcontext(), \
            _ledger(loaded, instance) as (ledger, dagster):
        options = RunOptions(chosen.packet_run, recover, verbose, ignore_deps=chosen.select.ignore_deps,
                             parallel=source, keep_going=keep_going)
        ran, outcomes = run_packet(compiled, dagster, ledger, selected, options,
                                   Progress(event=stream.progress if stream else on_progress))
        usage = {o.prompt: total_usage(r.usage for r in agent_run_records(ledger, compiled.binding, ran, o.prompt))
                 for o in outcomes}
        # The packet run ended here (a signal raised RunStopped above): its work handed off, as `when` says;
        # with --no-commit its work is not in a commit to push.
        handed = hand_off_packet_run(ledger, compiled.binding, ran, automatic=True) if commit else []
    result = RunResult(loaded.name, ran, outcomes, usage, stop.signum, chosen.stuck, chosen.warnings, handed)
    if on_event is not None:
        on_event(PacketRunEnded(ran, "completed" if result.ok else "failed"))
    return result


class _Streaming:
    """`run(on_event=…)`: a thread follows the Attempts' event files while the run goes; the progress listener's
    Attempt ends pass through it, after what the tail still holds, so a listener hears an Attempt's last tool
    call before its end."""

    def __init__(self, events_root: Path, on_event: EventListener, on_progress: Listener | None) -> None:
        self.tail = EventTail(events_root, "*/*/*.jsonl", from_now=True)
        self.on_event, self.on_progress = on_event, on_progress
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._follow, name="awp-events", daemon=True)

    def __enter__(self) -> _Streaming:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
        self.drain()

    def drain(self) -> None:
        with self.lock:
            for event in self.tail.poll():
                self.on_event(event)

    def _follow(self) -> None:
        while not self.done.wait(0.2):
            self.drain()

    def progress(self, event: ProgressEvent) -> None:
        if self.on_progress is not None:
            self.on_progress(event)
        if isinstance(event, AttemptEnded):
            self.drain()
            with self.lock:
                self.on_event(event)


def events(packet: PathLike | Packet, *, packet_run: str | None = None, state_dir: PathLike | None = None,
           instance: PathLike | None = None, providers: PathLike | None = None, translator: Translator = None,
           poll_s: float = 0.5, timeout_s: float | None = None) -> Iterator[RunEvent]:
    """Follow a packet run as it happens, whoever drives it (`awp run`, the daemon's run workers): each Attempt's
    start and end, the agent's messages, tool calls and token reports, then `PacketRunEnded`, where the iterator
    stops. `packet_run`: the one to follow (default: the newest, waiting for one to exist). The agents' activity is
    read from the Attempts' event files, the Attempt ends and the packet run's state from the instance (its
    status, every `poll_s` at least one second apart). `timeout_s`: raise TimeoutError past it."""
    loaded = load(packet)
    root = Path(state_dir) if state_dir is not None else loaded.root / ".awp"
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    tail: EventTail | None = None
    ended: set[str] = set()
    asked = 0.0
    while True:
        if tail is not None:
            yield from tail.poll()
        if time.monotonic() - asked >= max(poll_s, 1.0):
            asked = time.monotonic()
            try:
                report = status(loaded, packet_run=packet_run, instance=instance, providers=providers,
                                translator=translator)
            except PacketError:  # the packet run asked for has no run yet: a daemon may not have launched it
                report = None
            if report is not None and report.packet_run:
                packet_run = report.packet_run
                tail = tail or EventTail(root / "events" / packet_run)
                yield from tail.poll()
                for prompt in report.prompts:
                    for attempt in prompt.attempts:
                        if attempt.result != "running" and attempt.attempt not in ended:
                            ended.add(attempt.attempt)
                            yield AttemptEnded(prompt.prompt, attempt.attempt, attempt.result)
                if report.state in _ENDED_RUN_STATES:
                    yield PacketRunEnded(packet_run, report.state)
                    return
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"packet run {packet_run or '(none yet)'} of {loaded.name} did not end in {timeout_s} s")
        time.sleep(poll_s)


_ENDED_RUN_STATES = frozenset({"completed", "failed", "blocked", "stopped"})


def status(packet: PathLike | Packet, *, packet_run: str | None = None, instance: PathLike | None = None,
           providers: PathLike | None = None, translator: Translator = None) -> StatusReport:
    """The packet's newest packet run (or `packet_run`) as stored: each prompt's state, every Attempt, the
    last verifier report and the totals (the schema of `awp schema status`). `translator`: the one the
    packet's assets were built with (its asset keys are where the Attempts are stored)."""
    from awp_pipelines.orchestration.compile.binding import PacketBinding
    from awp_pipelines.orchestration.compile.translator import load_translator
    from awp_pipelines.orchestration.views.status import status_report

    loaded = load(packet)
    binding = PacketBinding.of(loaded, catalog(providers), translator=load_translator(translator))
    with _ledger(loaded, instance, many_reads=True) as (ledger, _):
        report = status_report(ledger, binding, packet_run)
    if packet_run and report.totals.runs == 0:
        raise PacketError(loaded.manifest_file, f"no runs of packet run '{packet_run}' in this instance",
                          hint="`awp status` without --packet-run shows the newest")
    return report


def repair(packet: PathLike | Packet, prompt: str, *, note: str | None = None, packet_run: str | None = None,
           instance: PathLike | None = None, commit: bool = True, providers: PathLike | None = None,
           on_progress: Listener | None = None, translator: Translator = None) -> RepairResult:
    """One repair Attempt of `prompt` in its latest packet run (or `packet_run`): its prompt carries the
    last Attempt's unmet items and the `note`. Nothing runs after it. A signal raises `Interrupted`."""
    from awp_pipelines.core.engine.interrupts import stopping
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from awp_pipelines.orchestration.driver.in_process import (
        Progress,
        RunOptions,
        execute_launch,
        recover_from_dead_runners,
    )
    from awp_pipelines.orchestration.driver.manual_repair import agent_run_now, note_tags, plan_repair
    from awp_pipelines.orchestration.views.standing import agent_run_records

    loaded = load(packet)
    pid = normalize_id(prompt)
    if all(p.id != pid for p in loaded.prompts):
        raise PacketError(loaded.root, f"no prompt {pid} in packet {loaded.name}",
                          hint="ids: " + ", ".join(p.id for p in loaded.prompts))
    found = catalog(providers)
    runtime = AwpResource(commit=commit)
    compiled = packet_assets(loaded, found, runtime, translator, plan_context=PlanContext(catalog=found))
    # As `run`: one runner per packet, a dead runner's runs ended first, and a signal stops in order.
    with packet_lock(loaded, runtime.state_root(loaded.root)), stopping(), \
            _ledger(loaded, instance) as (ledger, dagster):
        recover_from_dead_runners(compiled, ledger)
        run_id, launch = plan_repair(ledger, compiled.binding, pid, packet_run, note)
        execute_launch(compiled, dagster, ledger, run_id, launch, note_tags(note), RunOptions(run_id),
                       Progress(event=on_progress))
        record = agent_run_records(ledger, compiled.binding, run_id, pid)[-1]
        now = agent_run_now(ledger, compiled.binding, run_id, pid)
    ok = record.identity.number == launch.number and record.completed
    return RepairResult(loaded.name, run_id, pid, record, now.state, now.reason or "", ok)


def handoff(packet: PathLike | Packet, *, packet_run: str | None = None, instance: PathLike | None = None,
            providers: PathLike | None = None, translator: Translator = None) -> tuple[str, list[HandoffResult]]:
    """Hand the newest packet run (or `packet_run`) off again, whatever its state: push each `handoff:` repo's
    work and open or update its pull request. Returns the packet run and each repo's result (kept for `awp
    status`). A packet with no `handoff:` repo raises PacketError."""
    from awp_pipelines.orchestration.compile.binding import PacketBinding
    from awp_pipelines.orchestration.compile.translator import load_translator
    from awp_pipelines.orchestration.views.handoff import hand_off_packet_run
    from awp_pipelines.orchestration.views.status import has_handoff, newest_packet_run

    loaded = load(packet)
    if not has_handoff(loaded):
        raise PacketError(loaded.manifest_file, "no repo of the packet has a `handoff:`", key="repos",
                          hint="add `handoff: {forge: github, project: OWNER/NAME, account: ACCOUNT}` to a repo")
    binding = PacketBinding.of(loaded, catalog(providers), translator=load_translator(translator))
    with _ledger(loaded, instance) as (ledger, _):
        chosen = packet_run or newest_packet_run(ledger, loaded.name)
        if chosen is None:
            raise PacketError(loaded.manifest_file, f"no packet run of {loaded.name} in this instance yet",
                              hint=f"`awp run {loaded.root}` starts one")
        return chosen, hand_off_packet_run(ledger, binding, chosen, automatic=False)


def verify(packet: PathLike | Packet, ids: Sequence[str] = (), *,
           providers: PathLike | None = None) -> list[VerifierReport]:
    """The `verify:` contracts of the prompts (all, or `ids`) against the repos as they are now; no provider
    runs. A packet holding a secret is refused, as `run` refuses it. The commands run in the verifier's sandbox
    (unless the packet or prompt says `isolation: none`). Reports are redacted of every account's credential
    value (`providers`' accounts) and of the runner's secret-named variables: a verifier prints what it sees,
    an echoed key included."""
    loaded = load(packet)
    refuse_secrets(loaded)
    repos = {n: r.path for n, r in loaded.repos.items()}
    redactor = Redactor.for_catalog(catalog(providers)).with_runner_secrets()
    reports = []
    for prompt in selection_from_flags(tuple(ids), None, None, None, False).apply(loaded):
        if prompt.front.verify is None or prompt.front.verify.is_empty():
            continue
        # The commands run the work's code: in the verifier's sandbox unless the packet turns isolation off.
        bare = (prompt.front.isolation or loaded.manifest.isolation) == "none"
        ctx = VerifyContext(loaded.root, repos, loaded.default_repo, prompt.id,
                            isolation="none" if bare else "sandbox")
        reports.append(redactor.model(run_contract(prompt.front.verify, ctx)))
    return reports


@dataclass(frozen=True)
class _Chosen:
    """A selection resolved against the packet run it continues, and its plan."""

    packet: Packet
    catalog: Catalog
    context: PlanContext
    select: Select
    plan: PacketPlan
    packet_run: str | None  # the packet run continued (--remaining reads the newest), None for a new one
    whole: PacketPlan  # every prompt's plan, resolved once: `plan` is its selected part, the run's job builds on it
    nothing_left: str | None = None  # --remaining with nothing left: what to run instead
    stuck: str | None = None  # a resume where nothing can go on: why, and what to do
    warnings: list[str] = field(default_factory=list)  # changed prompts of a resume, chosen ones without upstream


def _planned(packet: PathLike | Packet, select: Select | Sequence[str], overrides: Overrides | None,
             providers: PathLike | None, instance: PathLike | None, preflight: bool, executables: bool,
             packet_run: str | None = None, translator: Translator = None, skip_preflight: bool = False) -> _Chosen:
    loaded = load(packet)
    refuse_secrets(loaded)  # a credential in a prompt would reach the agent, the UI, the git history and a plan
    found = catalog(providers)
    chosen = select if isinstance(select, Select) else Select(ids=tuple(select))
    context = PlanContext(catalog=found, overrides=overrides or Overrides())
    whole = build_plan(loaded, context)
    # A broken reference between the packet's parts (an unknown depends_on, target repo, phase) is refused as lint
    # reports it, by the plan too: the job would not compile, or the prompt would run elsewhere than it says.
    said = refuse_broken_references(lint_loaded(loaded, found, whole))
    whole = whole.model_copy(update={"warnings": [*whole.warnings, *said]})
    # --remaining continues the packet run it reads (the newest, or `packet_run`): its completed prompts are
    # the upstream of the remaining ones. A new packet run has nothing completed.
    statuses: dict[str, AgentRunStatus] = {}
    changes: list[str] = []  # prompts whose definition changed since their last Attempt in the packet run
    if chosen.remaining or packet_run is not None:
        from awp_pipelines.orchestration.compile.binding import PacketBinding
        from awp_pipelines.orchestration.compile.translator import load_translator
        from awp_pipelines.orchestration.views.standing import standing

        binding = PacketBinding.of(loaded, found, context, load_translator(translator), whole)
        with _ledger(loaded, instance) as (ledger, _):
            packet_run, statuses, changes = standing(ledger, binding, packet_run)
        if chosen.remaining and packet_run is None:
            raise PacketError(loaded.manifest_file, f"--remaining: no packet run of {loaded.name} in this instance "
                              "yet", key="selection", hint=f"`awp run {loaded.root}` starts one")
    selection = selection_from_flags(tuple(chosen.ids), chosen.from_id, chosen.through, chosen.phase,
                                     chosen.remaining, frozenset(p.id for p in loaded.prompts)
                                     - remaining_of(loaded, statuses))
    ids = [p.id for p in selection.apply(loaded)]
    if not preflight:  # a plan shows what is selected; only a run refuses
        return _Chosen(loaded, found, context, chosen, _part(whole, loaded, selection), packet_run, whole)
    if not ids:
        refusal = nothing_selected(loaded, selection, packet_run, statuses)
        if not (chosen.remaining and statuses):
            raise refusal
        empty = _part(whole, loaded, selection)
        return _Chosen(loaded, found, context, chosen, empty, packet_run, whole, f"{refusal.message}; {refusal.hint}")
    # An explicit selection is the user's decision: it runs, each unfinished upstream named (the run is tagged
    # awp/ignore_deps, so the compute does not hold it either). An automatic one never leaves an upstream out.
    unmet = {} if chosen.ignore_deps else unmet_upstream(loaded, ids, statuses)
    warnings = said + changes + upstream_warnings(unmet, packet_run)
    if unmet:
        chosen = replace(chosen, ignore_deps=True)
    # A resume where nothing can go on still runs (it ends dead runs, adopts what they committed), and says why.
    stuck = ended_explanation(ids, statuses, packet_run, loaded) if packet_run and not chosen.ignore_deps else None
    planned = _part(whole, loaded, selection)
    refuse_missing_trees(planned.prompts, loaded)
    refuse_unknown_providers(planned.prompts, found, loaded.manifest_file,
                             executables=executables and not skip_preflight, logins=not skip_preflight)
    return _Chosen(loaded, found, context, chosen, planned, packet_run, whole, None, stuck, warnings)


def _part(whole: PacketPlan, packet: Packet, selection: Selection) -> PacketPlan:
    """The selected prompts' part of the whole plan (a prompt's plan does not depend on the selection)."""
    ids = {p.id for p in selection.apply(packet)}
    return whole.model_copy(update={"prompts": [p for p in whole.prompts if p.id in ids]})


def _path(value: PathLike | None) -> Path | None:
    return Path(value) if value is not None else None


@contextmanager
def _ledger(loaded: Packet, instance: PathLike | None,
            many_reads: bool = False) -> Iterator[tuple[Ledger, DagsterInstance]]:
    """The ledger of the packet's instance (`instance`, else the one `awp run` keeps it in), made where every
    ledger is made (ledger/factory.py), with the instance for what only Dagster does with it."""
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_home

    with open_ledger(instance_home(loaded.root, _path(instance)), many_reads=many_reads) as opened:
        yield opened


# -- operator control: `awp control steer|amend|relax` ---------------------------------------------------------
def _operator(packet: PathLike | Packet, prompt: str | None, packet_run: str | None, state_dir: PathLike | None,
              live: bool) -> tuple[Packet, Path]:
    from awp_pipelines.core.decisions.operator_control import target_folder

    loaded = load(packet)
    root = Path(state_dir) if state_dir is not None else loaded.root / ".awp"
    return loaded, target_folder(root, packet_run, normalize_id(prompt) if prompt else None, live)


def steer(packet: PathLike | Packet, text: str, *, prompt: str | None = None, packet_run: str | None = None,
          author: str | None = None, state_dir: PathLike | None = None) -> SteerRequest:
    """Send `text` to the agent of the running Attempt (the only one, or `prompt`'s): its session ends at its next
    event and resumes, same provider session, with the message; the contract is unchanged. Refused (OperatorError)
    with no running session, or past the prompt's `recovery.max_steers`."""
    from awp_pipelines.core.decisions.operator_control import author_default, submit_steer

    loaded, folder = _operator(packet, prompt, packet_run, state_dir, live=True)
    return submit_steer(folder, text, author or author_default(), loaded.prompt(folder.name).recovery.max_steers)


def amend(packet: PathLike | Packet, prompt: str, clause: str, entries: Sequence[object], *, reason: str,
          packet_run: str | None = None, author: str | None = None, state_dir: PathLike | None = None) -> Amendment:
    """Add `entries` to `clause` of the contract the prompt's AgentRun (running, or its newest) is verified
    against; recorded with its reason and timing, and in each later Attempt's record. The packet's file is kept."""
    from awp_pipelines.core.decisions.amendments import submit
    from awp_pipelines.core.decisions.operator_control import author_default

    _, folder = _operator(packet, prompt, packet_run, state_dir, live=False)
    return submit(folder, "amend", clause, list(entries), reason, author or author_default())


def relax(packet: PathLike | Packet, prompt: str, clause: str, *, reason: str, confirm: bool = False,
          packet_run: str | None = None, author: str | None = None, state_dir: PathLike | None = None) -> Amendment:
    """Drop `clause` from the AgentRun's contract: the risky direction, refused without `confirm`."""
    from awp_pipelines.core.decisions.amendments import submit
    from awp_pipelines.core.decisions.operator_control import author_default

    _, folder = _operator(packet, prompt, packet_run, state_dir, live=False)
    return submit(folder, "relax", clause, [], reason, author or author_default(), confirm=confirm)
