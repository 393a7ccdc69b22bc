"""Definitions for 200 packets × 10 prompts: the code location's load time and peak RSS, against bare Dagster
building the same assets (a chain of 10 per group), the same blocking checks and one job per group.

    .venv/bin/python bench/definitions_load.py [--packets 200] [--prompts 10] [--repeat 3] [--json]

Each load runs in a fresh process (medians of --repeat); the clock starts after `import dagster`, and both
resolve the repository (`get_repository_def`), as the code server does. Goals: ≤ 1.5× time, ≤ 1.5× RSS.

AWP's load is measured twice: cold, with an empty parse cache (the first load after an edit: every file
parsed, the cache written), and warm, with the cache a previous load wrote (every later load of the unchanged
packets: the daemon's, the webserver's, each run worker's)."""

# No `from __future__ import annotations`: Dagster reads the assets' return annotations.
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emit import emit

GOAL = 1.5


def write_project(root: Path, packets: int, prompts: int) -> None:
    for p in range(packets):
        folder = root / "assets" / f"pk{p:03d}"
        (folder / "prompts").mkdir(parents=True)
        (folder / "packet.yaml").write_text(f"name: pk{p:03d}\nprovider: simulated\nrepos:\n  w: {{path: ./w}}\n",
                                            encoding="utf-8")
        for i in range(prompts):
            pid = f"{i + 1:02d}"
            (folder / "prompts" / f"{pid}_step.prompt.md").write_text(
                f"---\nid: \"{pid}\"\nname: Step {pid}\ntargets: [w]\nverify:\n  files_exist: [f{pid}.md]\n---\n"
                f"Write f{pid}.md.\n", encoding="utf-8")


def child_awp(root: str) -> tuple[float, float]:
    os.environ["AWP_PROJECT_ROOT"] = root
    start, cpu = time.perf_counter(), time.process_time()
    from awp_pipelines.orchestration.definitions import defs

    defs.get_repository_def()
    return time.perf_counter() - start, time.process_time() - cpu


def child_bare(packets: int, prompts: int) -> tuple[float, float]:
    from dagster import AssetCheckSpec, AssetKey, Definitions, MaterializeResult, asset, define_asset_job

    start, cpu = time.perf_counter(), time.process_time()
    assets, jobs = [], []
    for p in range(packets):
        group = f"pk{p:03d}"
        keys = [AssetKey([group, f"{i + 1:02d}_step"]) for i in range(prompts)]
        for i, key in enumerate(keys):
            @asset(key=key, deps=keys[i - 1:i], group_name=group, pool=f"awp_{group}_w",
                   check_specs=[AssetCheckSpec(f"f{i + 1:02d}_md_exists", asset=key, blocking=True)])
            def _step() -> MaterializeResult:
                return MaterializeResult()
            assets.append(_step)
        jobs.append(define_asset_job(f"packet__{group}", selection=keys))
    Definitions(assets=assets, jobs=jobs).get_repository_def()
    return time.perf_counter() - start, time.process_time() - cpu


def measure(mode: str, root: Path, packets: int, prompts: int) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB), CPU seconds: on a shared machine the CPU time varies less than the wall."""
    import dagster  # noqa: F401  (both sides start the clock after Dagster's import)

    seconds, cpu = child_awp(str(root)) if mode == "awp" else child_bare(packets, prompts)
    return seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=200)
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=["awp", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, Path(args.root or "."), args.packets, args.prompts)))
        return 0
    samples: dict[str, list[tuple[float, float, float]]] = {"awp": [], "awp_warm": [], "bare": []}
    with tempfile.TemporaryDirectory(prefix="awp-bench-defs-") as tmp:
        write_project(Path(tmp), args.packets, args.prompts)

        def load(mode: str, cache: Path) -> tuple[float, float, float]:
            done = subprocess.run([sys.executable, __file__, "--child", mode, "--root", tmp, "--packets",
                                   str(args.packets), "--prompts", str(args.prompts)],
                                  capture_output=True, text=True, check=True, cwd=tmp,
                                  env={**os.environ, "AWP_CACHE_HOME": str(cache)})
            return tuple(json.loads(done.stdout.strip().splitlines()[-1]))  # type: ignore[return-value]

        warm = Path(tmp) / "cache-warm"
        load("awp", warm)  # writes the cache the warm loads read
        for n in range(args.repeat):
            samples["bare"].append(load("bare", warm))
            samples["awp"].append(load("awp", Path(tmp) / f"cache-cold-{n}"))  # empty: nothing cached yet
            samples["awp_warm"].append(load("awp", warm))
    med = {m: tuple(statistics.median(s[i] for s in v) for i in range(3)) for m, v in samples.items()}
    ratios = {m: tuple(med[m][i] / med["bare"][i] for i in range(3)) for m in ("awp", "awp_warm")}
    figures: dict[str, object] = {"packets": args.packets, "prompts": args.prompts, "bare_s": round(med["bare"][0], 2),
                                  "bare_rss_mb": round(med["bare"][1], 1), "bare_cpu_s": round(med["bare"][2], 2)}
    for mode, prefix in (("awp", ""), ("awp_warm", "warm_")):
        figures |= {f"awp_{prefix}s": round(med[mode][0], 2), f"{prefix}time_ratio": round(ratios[mode][0], 2),
                    f"awp_{prefix}rss_mb": round(med[mode][1], 1), f"{prefix}rss_ratio": round(ratios[mode][1], 2),
                    f"awp_{prefix}cpu_s": round(med[mode][2], 2), f"{prefix}cpu_ratio": round(ratios[mode][2], 2),
                    f"{prefix}met": ratios[mode][0] <= GOAL and ratios[mode][1] <= GOAL}
    figures["goal"] = GOAL
    modes = (("awp", "AWP cold (empty parse cache)"), ("awp_warm", "AWP warm (parse cache written)"))
    return emit(figures, args.json, f"definitions for {args.packets} packets x {args.prompts} prompts; bare Dagster "
                f"{med['bare'][0]:.2f} s ({med['bare'][2]:.2f} s CPU), {med['bare'][1]:.0f} MB (goal <= {GOAL}x):\n"
                + "\n".join(f"  {what}: {med[m][0]:.2f} s ({med[m][2]:.2f} s CPU), {med[m][1]:.0f} MB; "
                             f"{ratios[m][0]:.2f}x time ({ratios[m][2]:.2f}x CPU), {ratios[m][1]:.2f}x RSS"
                             for m, what in modes))


if __name__ == "__main__":
    sys.exit(main())
