"""The process entry point of Celery: ``celery -A pipeline.app worker|beat``.

Settings come from ``$CORAL2_PIPELINE_CONFIG`` and the environment
(``pipeline.settings``); an invalid configuration stops the process here,
at import, with the list of problems.
"""

from pipeline.platform.app import create_app

app = create_app()
