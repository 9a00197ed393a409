"""Celery tasks: thin wrappers that observe, call ``pipeline.states``, then act.

Filled by the platform and lifecycle issues.
"""
