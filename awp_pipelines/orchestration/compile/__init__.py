"""How a packet looks in Dagster, with no storage: names, the translator, the packet bound to its plans, the launch
as run config, an Attempt's metadata and its page link."""
