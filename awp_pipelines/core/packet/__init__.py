"""What a packet is, read from disk: the packet, its models, and the project's settings files (providers.yaml,
prices.yaml, automation.yaml, home profile)."""
