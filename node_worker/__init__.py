"""Node-pinned work, run on each compute node's own queue ``node.<hostname>``.

What flux-coral2's clientmount perilog scripts do, as
Celery tasks: :mod:`node_worker.perilog` (the prolog and epilog),
:mod:`node_worker.service` (the ``nnf-clientmount`` service: systemd, or
simulated), :mod:`coral2_sim.node.agent` (the simulated clientmount daemon) and
:mod:`node_worker.app` (the worker process). Imports ``pipeline.model``,
``pipeline.store``, ``pipeline.clients`` — never ``pipeline.tasks``.
"""
