"""A packet run's hand-off (core/handoff/), run on the packet run as the status view reads it from the ledger it is
handed, its results kept there (`Ledger.keep_handoff`, with the pull request's tag on the first run). Called where
a packet run ends: `awp run` (api.py), the recovery sensor (sensors/recovery.py), and `awp handoff` by hand."""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import ENDED
from awp_pipelines.core.handoff.handoff import hand_off
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.page_link import attempt_page_url
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.views.status import has_handoff, status_report


def hand_off_packet_run(ledger: Ledger, binding: PacketBinding, packet_run: str, *,
                        automatic: bool) -> list[HandoffResult]:
    """Hand the packet run off and keep the results. `automatic` (a packet run that may just have ended): only
    one whose AgentRuns all ended, each repo as its `when` says, and not again once it succeeded (the sensor may
    see the packet run end twice); a skipped or failed one is tried again."""
    if not has_handoff(binding.packet):
        return []
    if automatic:
        done = ledger.handoff(binding.packet.name, packet_run)
        if done and all(r.ok for r in done):
            return []
    report = status_report(ledger, binding, packet_run)
    if automatic and any(p.state not in ENDED and p.state != "not_selected" for p in report.prompts):
        return []
    results = hand_off(binding.packet, binding.catalog or Catalog(), report, attempt_page_url, automatic=automatic)
    ledger.keep_handoff(binding.packet.name, packet_run, results)  # with the pull request's tag on the first run
    return results
