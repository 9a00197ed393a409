"""Pure lifecycle decisions: one module per DWS state, ``advance(...) -> list[Action]``.

No I/O here: the state functions take a snapshot of the Workflow, the job
record, the clock and the settings, and return the actions to perform.
Filled by the lifecycle issue.
"""
