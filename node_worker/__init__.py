"""Node-pinned work, run on each compute node's own queue ``node.<hostname>``.

What flux-coral2's clientmount perilog scripts do, as
Celery tasks: :mod:`node_worker.perilog` (the prolog and epilog),
:mod:`node_worker.service` (the ``nnf-clientmount`` service: systemd, or
simulated), :mod:`coral2_sim.node.agent` (the simulated clientmount daemon) and
:mod:`node_worker.app` (the worker process), :mod:`node_worker.tasks` (the node tasks it
registers, module-level functions), :mod:`node_worker.steps` (each job step, run and
tested alone) and :mod:`node_worker.heartbeat`. No module of it imports one that imports
it back. Imports ``pipeline.model``, ``pipeline.platform`` and ``pipeline.settings`` —
never ``pipeline.tasks``, the job store or a Kubernetes client.
"""
