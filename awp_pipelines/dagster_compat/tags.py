"""Run tags Dagster owns, spelled as Dagster spells them (its constants live in a private module; the canary test
compares these with them)."""

from __future__ import annotations

# Run tags Dagster owns, spelled as Dagster spells them (its constants live in a private module; the canary
# test compares these with them).
ROOT_RUN_ID_TAG = "dagster/root_run_id"


SENSOR_NAME_TAG = "dagster/sensor_name"


REPOSITORY_LABEL_TAG = ".dagster/repository"


# The code location of workspace.yaml: runs tagged with it show under the job in the UI.
REPOSITORY_TAG = {REPOSITORY_LABEL_TAG: "__repository__@awp_pipelines"}
