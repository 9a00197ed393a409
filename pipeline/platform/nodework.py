"""The trace of node messages: each sent to a node, taken and answered there, and each
answer counted, by job and node (logger ``coral2_pipeline.nodework``).

Off by default; ``pipeline.log_node_messages = true`` logs every line at INFO whatever
the process's log level, so an operator can follow one job's node work across the
management workers and the node workers (``grep 'job 1234 '``).
"""

from __future__ import annotations

import logging

from pipeline.settings import PipelineSettings

log = logging.getLogger("coral2_pipeline.nodework")


def configure(pipeline: PipelineSettings) -> None:
    """Turn the trace on or off for this process, as the settings say."""
    if pipeline.log_node_messages:
        log.setLevel(logging.INFO)
        if not log.handlers and not logging.getLogger().handlers:
            logging.basicConfig(format="%(asctime)s %(name)s %(message)s")
        log.disabled = False
    else:
        log.setLevel(logging.WARNING)


def trace(event: str, name: str, jobid: object, node: object, detail: str = "") -> None:
    """One line: ``job <jobid> <node> <event> <task>[: detail]``."""
    if log.isEnabledFor(logging.INFO):
        log.info("job %s %s %s %s%s", jobid, node, event, name, f": {detail}" if detail else "")
