"""The Attempt engine: one Attempt run end to end, and what reads its records back (status report)."""
