"""Per-prompt cost of `awp run` on a chain of trivial prompts (20 and 80), against bare Dagster running the same
assets and blocking checks in one run, each asset making the same git commit. Goal: ≤ 1.2× at both sizes,
and flat from 20 to 80 (per-prompt time at 80 ≤ 1.2× that at 20).

    .venv/bin/python bench/prompt_overhead.py [--sizes 20 80] [--json]

Both run in this process on a fresh embedded SQLite instance each (the config `awp run` writes); the clock
covers the run alone (`run_packet`, `execute_in_process`), not the compile."""

# No `from __future__ import annotations`: Dagster reads the assets' return annotations.
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagster import AssetKey, AssetsDefinition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dag_packets import init_repo, write_dag_packet  # noqa: E402
from emit import emit  # noqa: E402

GOAL = 1.2


def awp_seconds(folder: Path, size: int) -> float:
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from awp_pipelines.orchestration.driver.in_process import RunOptions, run_packet
    from awp_pipelines.orchestration.ledger.factory import ledger_of
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder

    ids = [f"{i + 1:02d}" for i in range(size)]  # prompt ids are two digits
    chain = {pid: [ids[i - 1]] for i, pid in enumerate(ids) if i}
    packet = load_packet(write_dag_packet(folder / "packet", dict.fromkeys(ids, "w"), 0, chain))
    compiled = packet_assets(packet, BUILTIN, AwpResource())
    instance = open_instance_folder(folder / "instance")
    try:
        start = time.perf_counter()
        _, outcomes = run_packet(compiled, instance, ledger_of(instance), ids, RunOptions(recover=False))
        seconds = time.perf_counter() - start
    finally:
        instance.dispose()
    assert all(o.completed for o in outcomes), [o.result for o in outcomes if not o.completed]
    return seconds


def bare_seconds(folder: Path, size: int) -> float:
    from dagster import AssetKey, Definitions

    from awp_pipelines.orchestration.ledger.instance import open_instance_folder

    repo = folder / "w"
    init_repo(repo)
    keys = [AssetKey(["bare", f"p{i + 1:02d}"]) for i in range(size)]
    assets = [_bare_asset(repo, key, keys[i - 1:i]) for i, key in enumerate(keys)]
    job = Definitions(assets=assets).resolve_implicit_global_asset_job_def()
    instance = open_instance_folder(folder / "instance")
    try:
        start = time.perf_counter()
        quiet = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
        result = job.execute_in_process(instance=instance, run_config=quiet)
        seconds = time.perf_counter() - start
    finally:
        instance.dispose()
    assert result.success
    return seconds


def _bare_asset(repo: Path, key: "AssetKey", deps: list) -> "AssetsDefinition":
    from dagster import AssetCheckResult, AssetCheckSpec, MaterializeResult, asset

    name = key.path[-1]

    @asset(key=key, deps=deps, pool="bare_w", check_specs=[AssetCheckSpec("file_exists", asset=key, blocking=True)])
    def _step() -> MaterializeResult:
        (repo / f"{name}.md").write_text(f"done {name}", encoding="utf-8")
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(repo), "commit", "--quiet", "-m", name], check=True, capture_output=True)
        return MaterializeResult(check_results=[AssetCheckResult(check_name="file_exists",
                                                                 passed=(repo / f"{name}.md").is_file())])

    return _step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 80])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="awp-bench-prompts-") as tmp:
        awp_seconds(Path(tmp) / "warm-awp", 2)  # imports and first-use caches, untimed
        bare_seconds(Path(tmp) / "warm-bare", 2)
        for size in args.sizes:
            bare = bare_seconds(Path(tmp) / f"bare{size}", size) / size
            awp = awp_seconds(Path(tmp) / f"awp{size}", size) / size
            rows.append({"prompts": size, "awp_ms": round(awp * 1e3, 1), "bare_ms": round(bare * 1e3, 1),
                         "ratio": round(awp / bare, 2), "goal": GOAL, "met": awp / bare <= GOAL})
    flat = rows[-1]["awp_ms"] / rows[0]["awp_ms"] if len(rows) > 1 else 1.0
    figures = {"rows": rows, "flatness": round(flat, 2), "flat": flat <= GOAL}
    lines = [f"{row['prompts']} prompts: awp run {row['awp_ms']} ms per prompt, bare Dagster {row['bare_ms']} ms; "
             f"{row['ratio']}x (goal <= {GOAL}x)" for row in rows]
    lines.append(f"per-prompt time at {rows[-1]['prompts']} / at {rows[0]['prompts']}: {flat:.2f} (flat: <= {GOAL})")
    return emit(figures, args.json, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
