"""The pure core: no Dagster. One folder per layer; docs/architecture.md says which may import which."""
