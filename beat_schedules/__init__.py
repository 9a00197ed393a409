"""The Celery beat schedule table: the deadline sweep, the resync and the redelivery."""
