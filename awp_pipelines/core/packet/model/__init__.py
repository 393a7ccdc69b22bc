"""Pydantic models for everything read from disk: manifests, prompt front matter, recovery, simulation."""
