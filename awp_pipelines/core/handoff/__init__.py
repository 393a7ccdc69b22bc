"""The hand-off: a packet run's work pushed to a branch of the repo's remote and a pull request (GitHub) or merge
request (GitLab) opened or updated for it, its body built from the packet run's records. No Dagster here: the
Dagster layer hands it the packet run's status report and stores what it returns."""
