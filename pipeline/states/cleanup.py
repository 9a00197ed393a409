"""A job reached CLEANUP: what ``job.cleanup`` does, in one list.

Its VNIs go to quarantine and each node it may have touched gets its epilog (nothing in
Flux waits for them); its hardware-collective reservation is released; a job tracked for
its nodes alone is finished once that is done. A job whose CLEANUP came before anything
was reserved or planned for it (cancelled while its RUN waited) holds nothing, but a
``#DW`` one may have ClientMounts on its computes all the same — its PreRun went on at
DWS meanwhile — so its computes still get the epilog that starts the clientmount
service, which Teardown waits on (:func:`pipeline.states.nodes.epilogs`).
"""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.states import hwcoll, nodes, slingshot
from pipeline.states.actions import Action


def on_cleanup(job: JobRecord, *, recorded: bool, clientmount: bool) -> list[Action]:
    """``job`` (``recorded``: the store holds its record) reached CLEANUP; ``clientmount``:
    the site runs the clientmount service from the node prolog and epilog."""
    if job.node_work is None and job.slingshot is None:
        unmount = nodes.epilogs(job, None, clientmount)
        # a record its job.run made and died before filling (it sent the job's exception,
        # perhaps): no copy of that run will fill it now (the fence); finish it, if no
        # Workflow keeps it
        return [*unmount, *(slingshot.finished(job, None) if recorded else [])]
    actions = [*slingshot.on_cleanup(job)]
    state = job.slingshot
    released = state
    if state is None or not state.released:
        vnis = state.vnis if state is not None and state.nodes else None
        actions += nodes.epilogs(job, vnis, clientmount)
        released = None if state is None else state.model_copy(update={"released": True})
    # whether the job is finished follows from what is done, not from the released mark: a
    # run killed between that mark and the finish left a record a re-run must finish; the
    # reservation's release is sent before the mark that the job is finished
    return [*actions, *hwcoll.on_cleanup(job), *slingshot.finished(job, released)]
