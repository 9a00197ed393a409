"""The ``dws.*`` service as coral2_dws serves it, over our hooks and store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.errors import PipelineError, TemporaryError
from pipeline.model.job import Teardown
from pipeline.services.hooks import Hooks
from pipeline.store import Store


def workflows(store: Store) -> list[int]:
    """Job ids whose Workflow the pipeline still tracks (``dws.status``)."""
    out = []
    for jobid in store.jobs.jobids():
        record = store.jobs.get(jobid)
        if record is not None and record.teardown != Teardown.DELETED:
            out.append(jobid)
    return sorted(out)


def serve(
    hooks: Hooks, store: Store, topic: str, payload: Any, *, wait: bool = True
) -> dict[str, Any]:
    """Answer one ``dws.*`` request: ``{"success": true}`` or ``{"success": false, "errstr"}``.
    ``wait=False``: a request the pipeline cannot take yet raises its
    :class:`~pipeline.errors.TemporaryError` (the caller tries again later) instead of
    being waited on here."""
    try:
        if topic == "dws.status":
            return {"success": True, "workflows": workflows(store)}
        if not isinstance(payload, Mapping):
            return {"success": False, "errstr": f"malformed {topic} payload: {payload!r}"}
        if wait:
            return hooks.dispatch(topic, payload)
        return hooks.dispatch_once(topic, payload)
    except TemporaryError as exc:
        if not wait:
            raise
        return {"success": False, "errstr": str(exc)}
    except PipelineError as exc:  # e.g. Redis unreachable: the request was not accepted
        return {"success": False, "errstr": str(exc)}
