"""The only package that imports kubernetes, httpx or flux.

The DWS client (Kubernetes custom resources) and the Flux handle; their
third-party exceptions are translated into ``pipeline.errors`` here.
"""
