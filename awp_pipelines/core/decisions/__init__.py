"""The decision function: what happens next from a packet run's history (policy, launches, budget, rotation, agent-
run state, stops, agent control)."""
