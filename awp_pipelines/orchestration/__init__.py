"""The Dagster layer: packets → assets, checks, jobs, sensors and resources; run history read back."""
