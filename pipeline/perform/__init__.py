"""The pipeline's hands: every effect a task's decision asks for, carried out.

A task gathers what its decision needs, ``pipeline.states`` decides, and this room
performs the actions (:mod:`~pipeline.perform.performer`), each idempotently, the
marks that say work is done last. The reads a gather makes through the Kubernetes
client that are more than one call (:mod:`~pipeline.perform.reads`), the fabric
manager's client (:mod:`~pipeline.perform.fabric`) and the deadlines' arming
(:mod:`~pipeline.perform.deadlines`) live here too: ``pipeline.tasks`` imports no
client (a contract holds it).
"""
