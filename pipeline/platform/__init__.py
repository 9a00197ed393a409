"""Celery: the app built from the settings, its configuration, the broker transport,
routing and node queues, and the base task every pipeline task runs in."""
