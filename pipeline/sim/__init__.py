"""Embedded simulators of the outside world, for the demo and the tests.

Sample data (``pipeline/data``) and, with the platform issue, a
Kubernetes-compatible API server with a simulated DWS controller, a
simulated Flux job manager, fabric manager and Cassini NICs.
"""
