"""coral2-pipeline: the job-lifecycle side work of a CORAL-2 system as idempotent tasks."""

import os

__version__ = "0.1.0"

# pydantic looks for plugins of its own through every installed distribution's entry
# points the first time it builds a model: a tenth of a per-job command's start (a
# prolog, a hook) for plugins the pipeline never uses. A site that wants one sets the
# variable itself (to the plugins it allows), which this leaves as it is.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
