"""Execution-plane isolation: where an agent process runs and what it can reach. Pure (no Dagster).

`profile.py` says whether an agent runs in a sandbox (`isolation: sandbox | none`), `grants.py` what the
sandbox grants (paths with their modes, hosts, environment names), `bwrap.py` turns grants into a
bubblewrap command line and checks that bubblewrap can start, `record.py` is what provisioning records on
the Attempt.
"""
