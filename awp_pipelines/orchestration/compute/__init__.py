"""The compute of a prompt asset: `prompt_compute.py` (what the asset calls), `attempt_compute.py` (a thin sequence)
over the launch choice, the target check, the work trees, the stops and the Attempt's marks."""
