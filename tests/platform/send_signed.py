"""Send one task as a process configured by the environment would (its key signs it) and
print its answer, ``no answer``, or ``sent``:
``python -m tests.platform.send_signed NAME QUEUE KWARGS_JSON [--wait S]``."""

from __future__ import annotations

import json
import sys

from celery.exceptions import TimeoutError as NoAnswer

from pipeline.platform.app import create_app
from pipeline.settings import load_settings


def main() -> None:
    name, queue, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    wait = float(sys.argv[sys.argv.index("--wait") + 1]) if "--wait" in sys.argv else None
    app = create_app(load_settings(), set_current=False)
    result = app.send_task(name, kwargs=kwargs, queue=queue)
    if wait is None:
        print("sent")
        return
    try:
        print(result.get(timeout=wait))
    except NoAnswer:
        print("no answer")


if __name__ == "__main__":
    main()
