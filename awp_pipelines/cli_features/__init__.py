"""Features only the CLI uses: prompt authoring, blame, JSON Schemas."""
