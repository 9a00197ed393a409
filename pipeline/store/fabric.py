"""What the pipeline remembers of the fabric manager between tasks: whether it was just
found down (``<prefix>:hwcoll-down``, a key that expires).

While the key lives, jobs reaching RUN skip their reservation at once instead
of each waiting ``hwcoll.request_timeout`` for a fabric manager that is not
answering; ``hwcoll.reconcile`` clears it as soon as the fabric manager answers.
"""

from __future__ import annotations

import redis

from pipeline.store.connection import translated
from pipeline.store.keys import Keys


@translated
class FabricState:
    """The fabric manager's recent health."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.key = client, f"{keys.prefix}:hwcoll-down"

    def mark_down(self, why: str, for_s: float) -> None:
        """The fabric manager failed a request: skip reservations for ``for_s`` seconds."""
        self.client.set(self.key, why[:500], px=max(1, int(for_s * 1000)))

    def down(self) -> str | None:
        """Why the fabric manager counts as down (None: it does not)."""
        raw = self.client.get(self.key)
        return None if raw is None else bytes(raw).decode(errors="replace")  # type: ignore[arg-type]

    def up(self) -> None:
        """The fabric manager answered."""
        self.client.delete(self.key)
