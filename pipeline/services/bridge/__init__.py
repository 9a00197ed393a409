"""The bridge between the pipeline and Flux: outbox delivery and the ``dws.*`` service.

Workers never talk to Flux. :mod:`pipeline.services.bridge.delivery` turns each outbox
message into the Flux request flux-coral2 would have sent (RPC topic and
payload, or a job KVS put) and hands it to a :class:`FluxEndpoint`: the
simulated job manager in the demo and tests, flux-python's handle in
production (:mod:`pipeline.services.bridge.main`). The same translation runs
in both, so the tests exercise the production path.
"""
