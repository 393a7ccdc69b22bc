"""A synthetic Claude Code stream-json event stream through the real adapter, JSONL writer and transcript.

    .venv/bin/python bench/stream_throughput.py [--mb 1024] [--json]

A stand-in `claude` (a shell script that `cat`s a pre-generated stream: thinking, messages, tool calls and
their results, every other result code-like output unless `--content prose`) is run by `ClaudeCodeAdapter`
through the shared subprocess runner: lines are read in chunks, parsed, normalised, redacted and appended
to the Attempt's JSONL; then the Markdown transcript is made (the sink builds it as the events go out: what is
timed after the session is its last step). The pieces are those of a real Attempt
(orchestration/attempt_compute.py, engine/attempts.py): the sink has a live feed polled by `ticking`, a few
literal credentials (the catalog's, the agent-control token added with `add_secret`), and the transcript is
the copy stored in the Attempt's metadata (METADATA_TRANSCRIPT_CHARS). Reported: input MB/s of the session
(process + parse + JSONL + transcript) and end to end, by the wall clock and by this process's CPU time (the
machines are shared: the load average is printed too); the milliseconds of the transcript's last step; peak
RSS of this process (the parent: the `cat` child is not counted). Goals from issue 7: < 200 MB peak RSS,
>= 100 MB/s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from awp_pipelines.core.packet.providers_config import ProviderSpec  # noqa: E402
from awp_pipelines.core.providers.base import ProviderRequest  # noqa: E402
from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter  # noqa: E402
from awp_pipelines.core.records.events import EventSink  # noqa: E402
from awp_pipelines.core.records.live_lines import LiveFeed, ticking  # noqa: E402
from awp_pipelines.core.records.transcript import METADATA_TRANSCRIPT_CHARS  # noqa: E402

SESSION = "b3c1f5e2-bench-session"
# As Redactor.for_catalog gives them: the credential values of the catalog's accounts; the control token.
SECRETS = ("sk-ant-bench-secret-000000", "sk-proj-bench-openai-0000000000", "bench-gemini-key-0000000000")
CONTROL_TOKEN = "awp-ctl-4f9c2e7a1b3d5f60"
_PROSE = ("the adapter reads each line as it arrives and writes one normalised event per line; "
          "memory stays bounded whatever the size of the stream")
_WORDS = _PROSE.split(" ")


def _text(n: int, salt: int) -> str:
    words = [_WORDS[(salt + i) % len(_WORDS)] for i in range(n)]
    return " ".join(words)


def _code(i: int) -> str:
    """A tool's output as agents' tools print it: test results, paths, a diff, flags and `=` (about 1 KB). The
    redaction's prefilter passes prose with a few fast scans; this is what makes it look closer."""
    lines = [f"tests/test_events_{i % 7}.py::test_case_{i % 97}_{k} PASSED{' ' * 12}[{k * 16:3d}%]" for k in range(6)]
    lines += [f"src/awp_pipelines/core/records/events.py:{120 + i % 50}: def emit(self, kind: str, fields=None):",
              "-rw-r--r-- 1 root root 4096 Dec  1 05:42 events.jsonl",
              "diff --git a/awp_pipelines/core/records/events.py b/awp_pipelines/core/records/events.py",
              f"@@ -{i % 300},7 +{i % 300},9 @@ class EventSink:",
              "-        line = jsonl.dumps_line(event)",
              f"+        payload = dict(fields or {{}}, seq={i})",
              f"========================= {i % 40 + 1} passed, 1 warning in 0.{i % 90 + 10}s ========================="]
    return "\n".join(lines)


def _turn(i: int, content: str = "mixed") -> list[dict]:
    """One agent turn: thinking, text, a tool call, its result (prose, or every other one code with `mixed`),
    a rate-limit notice now and then."""
    tool = f"toolu_{i:08d}"
    events = [
        {"type": "assistant", "session_id": SESSION, "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": _text(60, i)}, {"type": "text", "text": _text(120, i + 1)}],
            "usage": {"input_tokens": 1200, "output_tokens": 180}}},
        {"type": "assistant", "session_id": SESSION, "message": {"content": [
            {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": f"pytest -q tests/t{i}.py"}}]}},
        {"type": "user", "session_id": SESSION, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool,
             "content": _code(i) if content == "mixed" and i % 2 else _text(200, i + 2)}]}},
    ]
    if i % 50 == 0:
        events.append({"type": "rate_limit_event", "session_id": SESSION, "rate_limit_info": {
            "status": "allowed_warning", "resetsAt": 1764540000, "rateLimitType": "five_hour", "utilization": 0.8}})
    return events


def generate(path: Path, size: int, content: str = "mixed") -> int:
    """Write a stream of about `size` bytes, in constant memory; returns the bytes written."""
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        line = json.dumps({"type": "system", "subtype": "init", "session_id": SESSION, "model": "claude-bench",
                           "cwd": "/tmp", "tools": ["Bash"], "permissionMode": "default"}) + "\n"
        fh.write(line)
        written += len(line)
        i = 0
        while written < size:
            for event in _turn(i, content):
                line = json.dumps(event) + "\n"
                fh.write(line)
                written += len(line.encode("utf-8"))
            i += 1
        line = json.dumps({"type": "result", "subtype": "success", "is_error": False, "session_id": SESSION,
                           "total_cost_usd": 1.23, "num_turns": i, "result": "done",
                           "usage": {"input_tokens": 1000, "output_tokens": 500}}) + "\n"
        fh.write(line)
        written += len(line)
    return written


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=128, help="stream size in MiB (issue 7 asks for 1024)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--content", choices=("mixed", "prose"), default="mixed",
                        help="tool results: every other one code-like (default), or all prose (the figures before)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="awp-bench-stream-") as tmp:
        root = Path(tmp)
        stream = root / "stream.jsonl"
        size = generate(stream, args.mb * 1024 * 1024, args.content)
        fake = root / "claude"
        fake.write_text(f"#!/bin/sh\nexec cat {stream}\n")
        fake.chmod(0o755)
        adapter = ClaudeCodeAdapter(ProviderSpec(kind="claude_code", command=str(fake)))
        batches: list[int] = []  # the run's log: Dagster's context.log.info, one call per batch
        feed = LiveFeed(lambda lines: batches.append(len(lines)))
        sink = EventSink(root / "events.jsonl", "bench-1", secrets=SECRETS, root=root, live=feed)
        sink.add_secret(CONTROL_TOKEN)
        request = ProviderRequest(prompt_text="bench", cwd=root, timeout_ms=3_600_000,
                                  env={"PATH": os.environ.get("PATH", "")})
        rss_before = peak_rss_mb()
        started, cpu_started = time.perf_counter(), time.process_time()
        with ticking(sink.live):
            outcome = adapter.run(request, sink)
        session_s, session_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        transcript_started, transcript_cpu_started = time.perf_counter(), time.process_time()
        transcript = sink.transcript_markdown(METADATA_TRANSCRIPT_CHARS)
        transcript_s = time.perf_counter() - transcript_started
        transcript_cpu = time.process_time() - transcript_cpu_started
        total_s = time.perf_counter() - started
        jsonl_mb = (root / "events.jsonl").stat().st_size / 2**20
    mb = size / 2**20
    figures = {
        "stream_mb": round(mb, 1), "content": args.content, "ok": outcome.ok, "messages": outcome.messages,
        "events_jsonl_mb": round(jsonl_mb, 1), "transcript_chars": len(transcript),
        "live_lines": sum(batches),
        "session_mb_per_s": round(mb / session_s, 1), "transcript_ms": round(transcript_s * 1000, 1),
        "end_to_end_mb_per_s": round(mb / total_s, 1), "seconds": round(total_s, 1),
        # CPU time of this process: what the code costs, whatever else the shared machine is doing.
        "session_cpu_mb_per_s": round(mb / session_cpu, 1), "transcript_cpu_ms": round(transcript_cpu * 1000, 1),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "peak_rss_mb": round(peak_rss_mb(), 1), "rss_before_run_mb": round(rss_before, 1),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
