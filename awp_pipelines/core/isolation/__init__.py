"""Execution-plane isolation: where an agent process runs and what it can reach. Pure (no Dagster).

`profile.py` says whether an agent runs in a sandbox (`isolation: sandbox | none`), `grants.py` what the
sandbox grants (paths with their modes, hosts, environment names), `bwrap.py` turns grants into a
bubblewrap command line and checks that bubblewrap can start, `record.py` is what provisioning records on
the Attempt. `scoped_config.py` (config folders as discarded copies) and `trusted_files.py` (packets and
instances inside a tree) keep what a more trusted reader takes as configuration out of the agent's reach;
`limits.py`, `limiter.py` and `cgroup.py` bound what the sandbox may use; `leftovers.py` removes what a killed
runner's sandboxes left; `notice.py` is `awp run`'s word on a packet that turns isolation off.
"""
