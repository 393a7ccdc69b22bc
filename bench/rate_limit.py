"""From a rate limit to the next Attempt's start, in process (`awp run`): a one-prompt packet whose first Attempt
is refused by the provider (rate limit) and whose retry waits a fixed backoff, against the same packet without
the limit. Goal: the next Attempt starts within backoff + 0.5 s of the refused one's end.

    .venv/bin/python bench/rate_limit.py [--backoff-ms 2000] [--repeat 3] [--json]

Times are taken from the progress events the compute emits (AttemptEnded, AttemptStarted), in this process,
on a fresh embedded SQLite instance per repetition; medians of --repeat, interleaved with the baseline.
Under the daemon the retry is the recovery sensor's (a tick every 5 s, then a run worker's start): not
measured here."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dag_packets import init_repo  # noqa: E402
from emit import emit  # noqa: E402

SLACK_S = 0.5


def write_packet(root: Path, backoff_ms: int, limited: bool) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(
        "name: limited\nprovider: simulated\nmodel: simulated-demo\ntimeout: 10m\nrepos:\n  w: {path: ./w}\n"
        f"recovery:\n  retry:\n    base_delay_ms: {backoff_ms}\n    max_delay_ms: {backoff_ms}\n    jitter: false\n",
        encoding="utf-8")
    init_repo(root / "w")
    refused = ('    - messages: ["starting"]\n      error:\n        kind: provider_rate_limit\n'
               '        message: "Rate limit exceeded. Please retry later."\n') if limited else ""
    (root / "prompts" / "01_write.prompt.md").write_text(
        '---\nid: "01"\nname: Write\ntargets: [w]\nverify:\n  files_exist: [{repo: w, path: done.md}]\n'
        f'simulate:\n  attempts:\n{refused}    - messages: ["writing"]\n      writes:\n'
        '        - path: done.md\n          text: "done"\n---\nWrite done.md.\n', encoding="utf-8")
    return root


def run_once(folder: Path, backoff_ms: int, limited: bool) -> tuple[float, float | None]:
    """(whole run, gap from the refused Attempt's end to the next one's start, or None without a limit)."""
    from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted, ProgressEvent
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.instance import open_instance_folder
    from awp_pipelines.orchestration.resources import AwpResource
    from awp_pipelines.orchestration.runner import Progress, RunOptions, run_packet

    packet = load_packet(write_packet(folder / "packet", backoff_ms, limited))
    compiled = packet_assets(packet, BUILTIN, AwpResource(state_dir=str(folder / "state")))
    marks: list[tuple[str, float]] = []

    def on_event(event: ProgressEvent) -> None:
        if isinstance(event, AttemptStarted | AttemptEnded):
            marks.append((type(event).__name__, time.perf_counter()))

    instance = open_instance_folder(folder / "instance")
    try:
        start = time.perf_counter()
        _, outcomes = run_packet(compiled, instance, ["01"], RunOptions(), Progress(event=on_event))
        total = time.perf_counter() - start
    finally:
        instance.dispose()
    assert all(o.completed for o in outcomes), [o.result for o in outcomes]
    kinds = [k for k, _ in marks]
    expected = ["AttemptStarted", "AttemptEnded"] * (2 if limited else 1)
    assert kinds == expected, kinds
    return total, (marks[2][1] - marks[1][1]) if limited else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backoff-ms", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    gaps, limited, plain = [], [], []
    with tempfile.TemporaryDirectory(prefix="awp-bench-limit-") as tmp:
        run_once(Path(tmp) / "warm", args.backoff_ms, False)  # imports, first-use caches
        for i in range(args.repeat):
            total, gap = run_once(Path(tmp) / f"l{i}", args.backoff_ms, True)
            limited.append(total)
            gaps.append(gap or 0.0)
            plain.append(run_once(Path(tmp) / f"p{i}", args.backoff_ms, False)[0])
    backoff = args.backoff_ms / 1000
    gap, with_limit, without = statistics.median(gaps), statistics.median(limited), statistics.median(plain)
    figures = {"backoff_s": backoff, "gap_s": round(gap, 2), "over_backoff_s": round(gap - backoff, 2),
               "limited_s": round(with_limit, 2), "plain_s": round(without, 2),
               "ratio": round(gap / backoff, 2), "met": gap <= backoff + SLACK_S}
    return emit(figures, args.json, f"rate limit -> next Attempt started: {gap:.2f} s (backoff {backoff:g} s, "
                f"+{gap - backoff:.2f} s; goal <= +{SLACK_S} s); the packet {with_limit:.2f} s with the limit, "
                f"{without:.2f} s without")


if __name__ == "__main__":
    sys.exit(main())
