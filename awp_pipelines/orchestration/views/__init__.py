"""What the fronts read and hand off, each through the `Ledger` it is handed: `awp status` and the SDK's `status`
(`status.py`), `awp watch` (`watch.py`), `--remaining` and a resume's standing (`standing.py`), the Attempt pages of
`awp serve` (`attempt_pages.py`), and the hand-off of a packet run's work (`handoff.py`: the recovery sensor, `awp
run` and `awp handoff` call it). Above the ledger, below the sensors: the sensor hands a packet run off, and a
hand-off's pull request is the status view's report."""
