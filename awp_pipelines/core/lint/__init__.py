"""`awp lint`: a packet's authoring hazards, found before anything runs (Prompt Runner's PacketLint, plus AWP's).

Pure: reads the packet, the catalog and the home profile folder; runs nothing. A packet that does not load is
one `invalid_packet` error naming its file, line and key. Everything else is a finding with a severity from
`KINDS`: errors fail `awp lint`, warnings only with `--strict`.

Prompt Runner's `unknown_verify_clause` is never produced: the strict contract model rejects an unknown clause
while loading, so it arrives as `invalid_packet` with the clause's line and a did-you-mean hint.

    report      Finding, LintReport and every kind with its severity (KINDS)
    where       where a finding points: file, line and dotted key
    context     what every rule reads (packet, catalog, plan) and the findings it adds to
    prompts     ids, filenames, duplicates, target repos, depends_on, phases, cycles, agent_control
    contracts   completion contracts: missing ones, their repos and paths, commands that cannot prove anything
    targets     providers, model aliases, accounts, fallbacks, the timeout bound, reviewer independence
    enforcement permission_mode and allowed_tools nobody enforces, agents run with `isolation: none`
    hygiene     the home profile, templates, secrets written down, front-matter keys never sent
    references  the work trees; which broken references `awp plan` and `awp run` refuse or say as well
    linter      lint_packet: load the packet, run the rules in a fixed order
"""

from .contracts import SHELLS
from .hygiene import refuse_secrets, secrets_in_packet
from .linter import lint_loaded, lint_packet
from .references import refuse_broken_graph, refuse_broken_references
from .report import KINDS, Finding, LintReport, Severity, finding
from .targets import MIN_TIMEOUT_MS

__all__ = ["KINDS", "MIN_TIMEOUT_MS", "SHELLS", "Finding", "LintReport", "Severity", "finding", "lint_loaded",
           "lint_packet", "refuse_broken_graph", "refuse_broken_references", "refuse_secrets", "secrets_in_packet"]
