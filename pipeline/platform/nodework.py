"""The trace of node messages: each sent to a node, taken and answered there, and each
answer counted, by job and node (logger ``coral2_pipeline.nodework``).

Off by default; ``pipeline.log_node_messages = true`` logs every line at INFO whatever
the process's log level, so an operator can follow one job's node work across the
management workers and the node workers (``grep 'job 1234 '``).
"""

from __future__ import annotations

import logging

from pipeline.errors import RabbitMappingError
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.settings import PipelineSettings, Settings

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


def expected_computes(settings: Settings) -> tuple[list[str] | None, str]:
    """The computes that must run a node worker — every compute of the rabbit mapping when
    the node workers have work (CXI services, or clientmounts) — and, when they cannot be
    told, why: ``(None, "")`` when the node workers have no work."""
    if not (settings.cray_slingshot.cxi_enable or settings.pipeline.clientmount):
        return None, ""
    path = settings.rabbit.mapping
    if not path:
        return None, "rabbit.mapping is not set, so the computes that run one are unknown"
    try:
        return list(RabbitMapping.load(path).computes), ""
    except (OSError, RabbitMappingError) as exc:
        return None, f"rabbit.mapping {path}: {exc}"
