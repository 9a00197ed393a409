"""The simulated DWS: admission webhooks, the Workflow controller, the nnf driver, a WLM."""
