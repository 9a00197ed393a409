"""Every lifecycle decision, pure: given what a task read, the actions to perform.

Three kinds of event reach a job, and each has its decisions here:

* a Workflow change, observed (:mod:`~pipeline.states.observed`: coral2_dws's
  Workflow event handler, one module per DWS state and its ``TRANSITIONS`` table, plus
  :mod:`~pipeline.states.errors` for Error and TransientCondition);
* a Flux hook (:mod:`~pipeline.states.hooks`: ``dws.create`` … ``dws.abort``);
* a deadline that fires (:mod:`~pipeline.states.deadlines`).

No I/O happens here; the tasks read the inputs and perform the actions
(:mod:`~pipeline.states.actions`).
"""
