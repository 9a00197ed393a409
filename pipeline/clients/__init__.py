"""The only package that imports kubernetes, httpx or flux.

Clients for DWS (Kubernetes custom resources), the fabric manager and the
Flux outbox; third-party exceptions are translated into ``pipeline.errors``
here. Filled by the platform issue.
"""
