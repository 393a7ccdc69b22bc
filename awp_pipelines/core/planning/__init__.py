"""The plan of a packet run: prompts selected, targets resolved, providers checked before and during the run."""
