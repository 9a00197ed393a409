"""DirectiveBreakdowns → jobspec resources and Servers allocation sets.

Compatible with flux-coral2's ``flux_k8s/directivebreakdown.py``: the same
numbers and the same messages. Where upstream loops forever or ignores the
DWS contract, this module does better, as documented in
``docs/placement.md``:

* :func:`build_allocation_sets` terminates on an empty rabbit map;
* it honours ``colocation`` (sets with the same key never on the same rabbit),
  ``labels`` (only rabbits whose Storage carries every label, when the caller
  passes the Storage labels), ``AllocateSingleServer`` (count 1) and ``count``;
* :func:`summarize_breakdowns` interprets ``status.compute.constraints.location``
  and ``status.requires`` (checked against ``rabbit.allowed_daemons``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.errors import (
    BreakdownError,
    BreakdownNotReady,
    DaemonNotAllowed,
    PlacementError,
    ResourceLimitExceeded,
    UnknownAllocationLabel,
)
from pipeline.model.breakdown_types import AllocationSet, DirectiveBreakdown, as_breakdowns

GIB = 2**30

#: The allocation strategy each label must use.
STRATEGY_OF_LABEL: Mapping[str, str] = {
    "xfs": "AllocatePerCompute",
    "raw": "AllocatePerCompute",
    "gfs2": "AllocatePerCompute",
    "ost": "AllocateAcrossServers",
    "mdt": "AllocateAcrossServers",
    "mgtmdt": "AllocateAcrossServers",
    "mgt": "AllocateSingleServer",
}
PER_COMPUTE_LABELS = frozenset({"xfs", "raw", "gfs2"})
LUSTRE_LABELS = frozenset({"ost", "mdt", "mgt", "mgtmdt"})
#: The allocation sets that make a Lustre MGT, one per LNet address (nnf's NnfLustreMGT).
MGT_LABELS = frozenset({"mgt", "mgtmdt"})


def _known_labels() -> str:
    return ", ".join(STRATEGY_OF_LABEL)


class ResourceLimits:
    """Per-node storage maxima (GiB, None = unlimited) and one request's totals.

    Built from ``rabbit.policy.maximums``. :meth:`increment` adds an
    allocation set's size; :meth:`validate` checks xfs, gfs2, raw, lustre in
    that order, lustre per node being ``floor(total / nodecount)``.
    """

    TYPES = ("xfs", "gfs2", "raw", "lustre")

    def __init__(
        self,
        xfs: int | None = None,
        gfs2: int | None = None,
        raw: int | None = None,
        lustre: int | None = None,
    ) -> None:
        self.maximums: dict[str, int | None] = {
            "xfs": xfs,
            "gfs2": gfs2,
            "raw": raw,
            "lustre": lustre,
        }
        self.totals: dict[str, int] = dict.fromkeys(self.TYPES, 0)

    def fresh(self) -> ResourceLimits:
        """Return the same maxima with zero totals (one per request)."""
        return ResourceLimits(**self.maximums)

    def increment(self, label: str, gib: int) -> None:
        """Count ``gib`` of an allocation set labelled ``label`` against the totals."""
        if label == "ost":
            self.totals["lustre"] += gib
        elif label in ("mdt", "mgt", "mgtmdt"):
            return
        elif label in PER_COMPUTE_LABELS:
            self.totals[label] += gib
        else:
            raise UnknownAllocationLabel(
                f"unknown allocation set label '{label}' (known labels: {_known_labels()})"
            )

    def validate(self, nodecount: int) -> None:
        """Raise :class:`ResourceLimitExceeded` at the first maximum exceeded."""
        for kind in self.TYPES:
            maximum = self.maximums[kind]
            if maximum is None:
                continue
            requested = self.totals[kind]
            if kind == "lustre":
                requested = requested // nodecount
            if requested > maximum:
                raise ResourceLimitExceeded(
                    f"Requested a total of {requested} GiB of {kind} storage per node "
                    f"but max is {maximum} GiB per node"
                )


def _check_strategy(aset: AllocationSet) -> None:
    expected = STRATEGY_OF_LABEL.get(aset.label)
    if expected is None:
        raise UnknownAllocationLabel(
            f"unknown allocation set label '{aset.label}' (known labels: {_known_labels()})"
        )
    if aset.allocationStrategy != expected:
        raise BreakdownError(
            f"{aset.label} allocationStrategy must be '{expected}' "
            f"but got '{aset.allocationStrategy}'"
        )


def _type_of(entry: Any) -> str:
    if not isinstance(entry, Mapping) or "type" not in entry:
        raise BreakdownError(f"jobspec resource entry has no 'type': {entry!r}")
    return str(entry["type"])


def apply_breakdowns(
    breakdowns: Sequence[Mapping[str, Any] | DirectiveBreakdown],
    resources: Sequence[Mapping[str, Any]],
    *,
    min_size_gib: int = 4,
    limits: ResourceLimits | None = None,
) -> list[dict[str, Any]] | None:
    """Rewrite jobspec ``resources`` so the job asks for the rabbit storage it needs.

    Returns the new resources, the original ones when no storage is needed,
    or None when the resources already carry ``ssd`` requests ("already
    applied"). ``limits`` supplies the per-node maxima; totals are counted
    on a fresh copy so the same object can serve every job.
    """
    parsed = as_breakdowns(breakdowns)
    if not resources:
        raise BreakdownError("jobspec resources empty")
    top = resources[0]
    top_type = _type_of(top)
    children = list(top.get("with") or [])
    if top_type in ("slot", "chassis") and len(children) > 1:
        child_types = [_type_of(c) for c in children]
        for child_type in child_types:
            if child_type not in ("ssd", "node", "storage_node"):
                raise BreakdownError(
                    f"jobspec resources has top level '{top_type}' entry with {child_type} below it"
                )
        if "ssd" in child_types:
            return None
    if len(resources) > 1:
        raise BreakdownError(
            "jobspec resources must have a single top-level 'node' or 'chassis' entry, "
            f"got {len(resources)} entries"
        )
    if top_type == "chassis":
        node_entry = next((c for c in children if _type_of(c) == "node"), None)
        if node_entry is None:
            first = _type_of(children[0]) if children else None
            raise BreakdownError(f"Expected 'node' type below 'chassis, got {first}")
        nodes_per_chassis = int(node_entry["count"])
        nodecount = nodes_per_chassis * int(top["count"])
        multiplier = nodes_per_chassis
    elif top_type == "node":
        nodecount = int(top["count"])
        multiplier = 1
    else:
        raise BreakdownError(
            "jobspec resources must have a single top-level 'node' or 'chassis' entry, "
            f"got '{top_type}'"
        )
    if nodecount < 1:
        raise BreakdownError(f"jobspec resources ask for {nodecount} nodes; at least 1 is needed")
    tracker = (limits or ResourceLimits()).fresh()
    ssd = 0
    for breakdown in parsed:
        if breakdown.kind != "DirectiveBreakdown":
            raise BreakdownError(f"unsupported breakdown kind '{breakdown.kind}'")
        if not breakdown.status.ready:
            raise BreakdownNotReady("Breakdown marked as not ready")
        if breakdown.status.storage is None:
            continue
        for aset in breakdown.status.storage.allocationSets:
            _check_strategy(aset)
            capacity_gib = max(min_size_gib, math.ceil(aset.minimumCapacity / GIB))
            tracker.increment(aset.label, capacity_gib)
            if aset.label in PER_COMPUTE_LABELS:
                per_node = capacity_gib
            else:
                per_node = math.ceil(capacity_gib / nodecount)
            ssd += per_node * multiplier
    if ssd <= 0:
        return [copy.deepcopy(dict(r)) for r in resources]
    tracker.validate(nodecount)
    ssd_entry = {"type": "ssd", "count": ssd, "exclusive": True}
    if top_type == "node":
        node_copy = copy.deepcopy(dict(top))
        node_copy["count"] = 1
        return [
            {"type": "slot", "count": nodecount, "label": "rabbit", "with": [node_copy, ssd_entry]}
        ]
    chassis = copy.deepcopy(dict(top))
    chassis["with"] = [*chassis.get("with", []), ssd_entry]
    return [chassis]


# ---------------------------------------------------------------------------
# Servers allocation sets with the DWS constraints honoured


def _labels_match(required: Sequence[str], labels: Mapping[str, str]) -> bool:
    for requirement in required:
        key, sep, value = requirement.partition("=")
        if sep:
            if labels.get(key) != value:
                return False
        elif key not in labels:
            return False
    return True


def storages_of(breakdowns: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What ``dws.setup`` needs of each DirectiveBreakdown, in order: its Servers
    ``reference`` and ``allocationSets`` (``status.storage``). Breakdowns without
    storage (a persistent instance's destroy, say) have no Servers and are left out."""
    storages = [(breakdown.get("status") or {}).get("storage") for breakdown in breakdowns]
    return [
        {"reference": storage.get("reference"), "allocationSets": storage.get("allocationSets")}
        for storage in storages
        if storage
    ]


def servers_of(
    storage: Mapping[str, Any],
    nodes_per_rabbit: Mapping[str, int],
    compute_count: int,
    mgts: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One breakdown's Servers reference and the ``spec.allocationSets`` to fill it with;
    ``mgts``: the rabbits holding another file system's Lustre MGT (:func:`build_allocation_sets`).

    Raises BreakdownError when DWS left the storage without a Servers reference or
    allocation sets (it always gives both once the Proposal is complete).
    """
    reference, sets = storage.get("reference"), storage.get("allocationSets")
    if not isinstance(reference, Mapping) or not reference.get("name") or sets is None:
        raise BreakdownError(
            "a DirectiveBreakdown's storage names no Servers object or allocation sets; "
            "DWS has not completed the Proposal (check the Workflow's DirectiveBreakdowns)"
        )
    return dict(reference), build_allocation_sets(sets, nodes_per_rabbit, compute_count, mgts=mgts)


def build_allocation_sets(
    allocation_sets: Sequence[Mapping[str, Any] | AllocationSet],
    nodes_per_rabbit: Mapping[str, int],
    compute_count: int,
    *,
    min_alloc_gib: int = 4,
    storage_labels: Mapping[str, Mapping[str, str]] | None = None,
    mgts: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Return the Servers ``spec.allocationSets`` (sizes in bytes) for one breakdown.

    ``nodes_per_rabbit`` counts the job's computes behind each rabbit, in
    first-seen order. ``storage_labels`` maps rabbit → its Storage's labels;
    when None, ``labels`` constraints are not checked (upstream behaviour).
    ``mgts`` maps each rabbit holding another file system's Lustre MGT to that
    file system's Servers: nnf-sos gives a rabbit's LNet address one MGT and fails the
    Setup of a second ("multiple MGTs found for address"), so an MGT goes on a rabbit of
    the job that holds none, and a job with no such rabbit is refused here, in words.
    """
    sets = [
        a if isinstance(a, AllocationSet) else AllocationSet.model_validate(a)
        for a in allocation_sets
    ]
    if sets and not nodes_per_rabbit:
        raise PlacementError(
            f"cannot place allocation set '{sets[0].label}': none of the job's nodes is "
            "behind a rabbit (check the rabbitmapping and the job's R)"
        )
    by_size = sorted(
        nodes_per_rabbit, key=lambda r: -nodes_per_rabbit[r]
    )  # stable: ties keep order
    keys_on: dict[str, set[str]] = {rabbit: set() for rabbit in nodes_per_rabbit}
    result: list[dict[str, Any]] = []
    for aset in sets:
        keys = {c.key for c in aset.constraints.colocation if c.type == "exclusive"}

        def eligible(rabbit: str, aset: AllocationSet = aset, keys: set[str] = keys) -> str | None:
            """Return why ``rabbit`` cannot take ``aset``, or None when it can."""
            if (
                storage_labels is not None
                and aset.constraints.labels
                and not _labels_match(aset.constraints.labels, storage_labels.get(rabbit, {}))
            ):
                return f"its Storage lacks labels {aset.constraints.labels}"
            clash = keys & keys_on[rabbit]
            if clash:
                return f"it already holds an allocation with colocation key {sorted(clash)[0]!r}"
            return None

        strategy = aset.allocationStrategy
        count = 1 if strategy == "AllocateSingleServer" else aset.constraints.count
        placed: dict[str, int] = {}
        busy = {} if aset.label not in MGT_LABELS else dict(mgts or {})
        if strategy == "AllocatePerCompute":
            size = aset.minimumCapacity
            for rabbit, nodes in nodes_per_rabbit.items():
                reason = eligible(rabbit)
                if reason is not None:
                    raise PlacementError(
                        f"allocation set '{aset.label}' needs storage on rabbit {rabbit} "
                        f"(the job's computes are behind it) but {reason}"
                    )
                placed[rabbit] = nodes
        elif count is not None:
            size = math.ceil(aset.minimumCapacity / count)
            candidates = [r for r in by_size if eligible(r) is None]
            if not candidates:
                raise PlacementError(f"no rabbit of the job can take allocation set '{aset.label}'")
            if busy and not (candidates := [r for r in candidates if r not in busy]):
                held = ", ".join(f"{r} (for {busy[r]})" for r in by_size if r in busy)
                raise PlacementError(
                    f"allocation set '{aset.label}' needs a rabbit of the job with no Lustre "
                    f"MGT, but each already holds one: {held}; nnf-sos gives a rabbit's LNet "
                    "address one MGT and would fail Setup (multiple MGTs found). Submit again "
                    "once that file system is gone, or use a storage profile with a "
                    "standalone MGT (standaloneMgtPoolName)"
                )
            if keys and count > len(candidates):
                raise PlacementError(
                    f"allocation set '{aset.label}' needs {count} allocations with colocation "
                    f"key {sorted(keys)[0]!r}, but only {len(candidates)} of the job's rabbits "
                    "can take one"
                )
            for i in range(count):
                rabbit = candidates[i % len(candidates)]
                placed[rabbit] = placed.get(rabbit, 0) + 1
        else:
            candidates = [r for r in nodes_per_rabbit if eligible(r) is None]
            if not candidates:
                raise PlacementError(f"no rabbit of the job can take allocation set '{aset.label}'")
            counts = [nodes_per_rabbit[r] for r in candidates]
            divisor = math.gcd(*counts)
            total = compute_count if len(candidates) == len(nodes_per_rabbit) else sum(counts)
            size = math.ceil(divisor * aset.minimumCapacity / total)
            placed = {r: nodes_per_rabbit[r] // divisor for r in candidates}
        size = max(size, min_alloc_gib * GIB)
        for rabbit in placed:
            keys_on[rabbit] |= keys
        result.append(
            {
                "allocationSize": size,
                "label": aset.label,
                "storage": [{"allocationCount": n, "name": r} for r, n in placed.items()],
            }
        )
    return result


def check_is_lustre(allocation_sets: Sequence[Mapping[str, Any] | AllocationSet]) -> bool:
    """Return whether any allocation set is a Lustre target (ost, mdt, mgt, mgtmdt)."""
    return any(
        (a.label if isinstance(a, AllocationSet) else a.get("label")) in LUSTRE_LABELS
        for a in allocation_sets
    )


# ---------------------------------------------------------------------------
# compute placement and required daemons

Placement = Literal["physical", "preferred", "any"]


@dataclass(frozen=True)
class BreakdownSummary:
    """What the breakdowns of one job require beyond storage sizes.

    ``placement`` is ``"physical"`` when some allocation set needs its
    computes to have PCIe to the rabbit (the rabbit-slot jobspec form makes
    the scheduler honour this), ``"preferred"`` when physical access is only
    best effort, ``"any"`` when network access suffices.
    ``required_daemons`` are recorded for the node prolog.
    """

    placement: Placement
    required_daemons: tuple[str, ...]
    lustre: bool


def summarize_breakdowns(
    breakdowns: Sequence[Mapping[str, Any] | DirectiveBreakdown],
    *,
    allowed_daemons: Sequence[str] = ("copy-offload",),
) -> BreakdownSummary:
    """Interpret compute location constraints and required daemons of a job's breakdowns."""
    placement: Placement = "any"
    daemons: list[str] = []
    lustre = False
    for breakdown in as_breakdowns(breakdowns):
        status = breakdown.status
        for daemon in [*status.requires, *status.requiredDaemons]:
            if daemon not in allowed_daemons:
                raise DaemonNotAllowed(
                    f"DW directive of {breakdown.name or 'a breakdown'} requires daemon "
                    f"'{daemon}', which this site does not offer "
                    f"(rabbit.allowed_daemons = {list(allowed_daemons)})"
                )
            if daemon not in daemons:
                daemons.append(daemon)
        if status.storage is not None and check_is_lustre(status.storage.allocationSets):
            lustre = True
        if status.compute is None:
            continue
        for location in status.compute.constraints.location:
            for access in location.access:
                if access.type != "physical":
                    continue
                if access.priority == "mandatory":
                    placement = "physical"
                elif placement == "any":
                    placement = "preferred"
    return BreakdownSummary(placement=placement, required_daemons=tuple(daemons), lustre=lustre)
