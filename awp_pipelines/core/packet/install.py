"""This package as installed: its version and its folder. The core reads them here, never from the package root
(whose SDK functions load the Dagster layer), and never assumes a source checkout around the package."""

from __future__ import annotations

from pathlib import Path

VERSION = "0.1.0"  # as pyproject.toml's [project] version; the package root re-exports it as __version__
PACKAGE_DIR = Path(__file__).resolve().parents[2]  # .../awp_pipelines, in a checkout or in site-packages
