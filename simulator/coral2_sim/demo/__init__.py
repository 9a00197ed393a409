"""`coral2-pipeline demo`: the domain model walk-through and the lifecycle batch."""
