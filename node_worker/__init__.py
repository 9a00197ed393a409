"""Node-pinned tasks (mounts, CXI services), run on each compute node's own queue.

Imports ``pipeline.model``, never ``pipeline.tasks``. Filled by the lifecycle
and Slingshot issues.
"""
