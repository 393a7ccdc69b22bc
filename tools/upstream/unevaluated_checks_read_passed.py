"""Dagster UI bug: in the asset graph, an asset whose checks never ran (or are running) shows a green check
mark and "0 / N Passed", the look of a success.

Runs on bare Dagster (no AWP): `python tools/upstream/unevaluated_checks_read_passed.py`. Exit 0 and
"REPRODUCED" when the UI shipped in the installed `dagster-webserver` (read from its own source maps) still
draws the graph node's check summary that way; exit 1 otherwise.

By hand: `dagster dev` on

    from dagster import AssetCheckResult, Definitions, asset, asset_check
    @asset
    def a() -> None: ...
    @asset_check(asset=a)
    def c() -> AssetCheckResult: return AssetCheckResult(passed=True)
    defs = Definitions(assets=[a], asset_checks=[c])

and open Lineage before materializing `a`: its node's "Asset checks" row reads "✓ 0 / 1 Passed" in green. The
asset's Overview tab shows the same check as a grey dot and its Checks tab says "Not evaluated".

Why: `AssetChecksStatusSummary.tsx`, `rendering === 'dag2025'` (the graph node), picks a red icon for ERROR, a
yellow one for WARN, a grey dot for SKIPPED, and otherwise `<Icon name="done" color={Colors.accentGreen()} />`,
so NOT_EVALUATED and IN_PROGRESS fall through to the green mark. The other renderings ('tags', 'dag') draw a
grey dot for NOT_EVALUATED and a spinner for IN_PROGRESS.

Proposed fix: in the 'dag2025' branch, a grey dot when no check passed and none is in progress (NOT_EVALUATED),
and a spinner for IN_PROGRESS, as the other two renderings do; the green mark only when every check passed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SOURCE = "assets/asset-checks/AssetChecksStatusSummary.tsx"


def shipped_source() -> str | None:
    import dagster_webserver

    build = Path(dagster_webserver.__file__).parent / "webapp" / "build" / "_next" / "static"
    for found in build.rglob("*.js.map"):
        text = found.read_text(encoding="utf-8", errors="replace")
        if SOURCE not in text:
            continue
        data = json.loads(text)
        for name, content in zip(data.get("sources", []), data.get("sourcesContent") or [], strict=False):
            if name.endswith(SOURCE) and content:
                return str(content)
    return None


def main() -> int:
    import dagster_webserver

    source = shipped_source()
    print(f"dagster-webserver {dagster_webserver.__version__}: {SOURCE} "
          f"{'found in the shipped source maps' if source else 'not found'}")
    if source is None:
        return 1
    branch = re.search(r"if \(rendering === 'dag2025'\) \{\s*const icon = \(\) => \{(.*?)\n    \};", source, re.S)
    if branch is None:
        print("not reproduced: the graph node's check summary is drawn some other way now")
        return 1
    body = branch.group(1)
    print("the graph node's icon:" + body.rstrip())
    falls_green = body.rstrip().endswith("return <Icon name=\"done\" color={Colors.accentGreen()} />;")
    if falls_green and "NOT_EVALUATED" not in body and "IN_PROGRESS" not in body:
        print("REPRODUCED: checks never evaluated (or in progress) fall through to the green 'done' mark beside "
              "'0 / N Passed'")
        return 0
    print("not reproduced: the graph node tells unevaluated checks from passed ones")
    return 1


if __name__ == "__main__":
    sys.exit(main())
