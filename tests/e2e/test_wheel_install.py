"""The package as a user installs it: a wheel built from the repository, installed into a fresh venv, runs the demo
packet from a project folder that is not the source checkout, and its code location finds that project's packets.
Nothing of the checkout is on the path: the price table, the schemas and the code location come from the wheel.

The fresh venv takes its dependencies (Dagster and the rest) from the project's venv through a `.pth` line, so the
test does not download and install them again; that folder's own `.pth` files (the editable install's finder of
the checkout) are not processed there, so `awp_pipelines` can only come from the wheel, which the test asserts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _site_packages(venv: Path) -> Path:
    return Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))


def test_a_wheel_in_a_fresh_venv_runs_the_demo_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=600)
    [wheel] = dist.glob("awp_pipelines-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert {"awp_pipelines/core/packet/prices.yaml", "awp_pipelines/py.typed"} <= shipped

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = _site_packages(venv)
    (site / "project-deps.pth").write_text(str(Path(sysconfig.get_path("purelib"))) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                    "--no-deps", str(wheel)], check=True, capture_output=True, text=True, timeout=600)

    project = tmp_path / "project"
    demo = project / "assets" / "demo"
    shutil.copytree(REPO / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    shutil.copytree(REPO / "resources", project / "resources")
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True, timeout=120)
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import awp_pipelines; print(awp_pipelines.__file__)"], cwd=project,
                           check=True, capture_output=True, text=True).stdout.strip()
    assert Path(where).is_relative_to(site), where

    ran = subprocess.run([str(venv / "bin" / "awp"), "run", "assets/demo", "--json"], cwd=project,
                         capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    log = subprocess.run(["git", "-C", str(demo / "workspace"), "log", "--format=%s"], check=True,
                         capture_output=True, text=True).stdout
    assert len([line for line in log.splitlines() if line.strip()]) >= 4  # the setup's commit and one per prompt

    location = subprocess.run(
        [python, "-c", "from awp_pipelines.orchestration.definitions import defs; "
                       "print(sorted({key.path[0] for key in defs.resolve_asset_graph().get_all_asset_keys()}))"],
        cwd=project, capture_output=True, text=True, timeout=300)
    assert location.returncode == 0, location.stderr[-3000:]
    assert "demo" in location.stdout
