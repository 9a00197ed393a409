"""The platform tests' fixtures: beats on the session's Redis (:mod:`beat_fixtures`)."""

from tests.platform.beat_fixtures import beats, keys

__all__ = ["beats", "keys"]
