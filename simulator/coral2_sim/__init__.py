"""The simulated outside world, for the demo and the tests; no product module imports it.

``kube`` (a Kubernetes-compatible API server), ``dws`` (the DWS webhooks
and controller with the nnf driver), ``flux`` (a Flux job manager with
dws-jobtap's behaviour), ``node`` (a compute's clientmount service and
daemon), ``system`` (all of it as processes on loopback) and ``demo``.
Sample data is in ``pipeline/data``.
"""
