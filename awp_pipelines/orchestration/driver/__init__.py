"""`awp run` in process (the daemon's path without a daemon), a DAG packet in parallel, and a repair asked for by
hand."""
