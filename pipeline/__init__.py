"""coral2-pipeline: the job-lifecycle side work of a CORAL-2 system as idempotent tasks."""

__version__ = "0.1.0"
