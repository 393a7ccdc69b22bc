"""The code location's sensors: recovery (retries, fallbacks, repairs under the daemon) and housekeeping, with the
instance a tick reads."""
