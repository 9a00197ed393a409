"""Redis store: job records, VNI pool, deadlines, locks, eventlogs, the outbox.

Filled by the platform issue.
"""
