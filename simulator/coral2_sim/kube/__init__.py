"""A Kubernetes-compatible API server on loopback, and in-process clients of it."""
