"""The Celery tasks: each reads what its decision needs, calls ``pipeline.states``, and
performs the actions it returns (``pipeline.perform``)."""
