"""One module per verify clause. Each takes one entry (or, for whole-repo clauses, the clause's entries)
and a VerifyContext and returns an Outcome; the engine turns Outcomes into ItemResults."""
