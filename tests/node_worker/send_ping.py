"""Send one ``node.ping`` as a process configured by the environment would, and print its
answer or ``no answer``: ``python -m tests.node_worker.send_ping HOST [--unsigned]``."""

from __future__ import annotations

import sys

from celery import Celery
from celery.exceptions import TimeoutError as NoAnswer

from pipeline.platform.config import celery_config
from pipeline.platform.signing import secure
from pipeline.settings import load_settings


def main() -> None:
    host, unsigned = sys.argv[1], "--unsigned" in sys.argv
    settings = load_settings()
    app = Celery("sender", set_as_current=False)
    app.conf.update(celery_config(settings))
    if unsigned:
        app.conf.update(task_serializer="json", accept_content=["json"])
    else:
        secure(app, settings.pipeline)
    queue = settings.pipeline.queues.node_prefix + host
    result = app.send_task("node.ping", args=[host], queue=queue)
    try:
        print(result.get(timeout=3))
    except NoAnswer:
        print("no answer")


if __name__ == "__main__":
    main()
