"""AWP's state in a Dagster instance: the only reader and writer of it (packet-run history, claims, leases, beats,
stops, cooldowns, adoption, settling, reaping) and the only importer of dagster_compat."""
