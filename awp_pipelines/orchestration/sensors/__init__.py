"""The code location's sensors: recovery (retries, fallbacks, repairs under the daemon) and housekeeping, each tick
handed the ledger of its instance."""
