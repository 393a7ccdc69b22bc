"""Every use of Dagster's private names, one module per concern (docs/upstream.md). None is imported when a module
here loads: a name renamed upstream fails the function that uses it and its canary test
(tests/dagster_compat/test_dagster_compat.py), never the import of awp_pipelines."""
