"""The Celery beat schedule table (deadline sweep and housekeeping duties).

Filled by the platform issue.
"""
