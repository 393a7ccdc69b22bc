"""What an Attempt leaves behind and how it is written: events, transcript, live lines, commit, usage, failure
envelope, run tags, all redacted."""
