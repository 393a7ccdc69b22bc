"""Run tags and metadata keys Dagster owns, spelled as Dagster spells them: its constants live in private modules
(tests/dagster_compat/test_dagster_compat.py compares these with them), and no other module spells a `dagster/` name
(tests/dagster_compat/test_storage_boundary.py)."""

from __future__ import annotations

ROOT_RUN_ID_TAG = "dagster/root_run_id"
PARENT_RUN_ID_TAG = "dagster/parent_run_id"
SENSOR_NAME_TAG = "dagster/sensor_name"
REPOSITORY_LABEL_TAG = ".dagster/repository"
# The asset metadata key the UI reads a code reference from (an editor link to the prompt file).
CODE_REFERENCES_KEY = "dagster/code_references"

# The code location of workspace.yaml: runs tagged with it show under the job in the UI.
REPOSITORY_TAG = {REPOSITORY_LABEL_TAG: "__repository__@awp_pipelines"}
# Dagster's run retries (a deployment's `run_retries`) re-launch a run only when its worker was lost (a pod
# evicted, a host gone): an Attempt's own failure is for AWP's recovery to decide, never a blind re-run.
WORKER_LOSS_ONLY = {"dagster/retry_on_asset_or_op_failure": "false"}
