"""``coral2-pipeline exporter``: Prometheus metrics of the pipeline at ``/metrics``.

Each scrape reads the job store as ``status`` does (read-only; the monitoring role's
Redis user is enough) and answers with ``prometheus-client``'s text format:

- ``coral2_jobs{state}``: tracked jobs by the state their last observe saw;
- ``coral2_job_oldest_seconds{state}``: how long the job longest in it went unchanged;
- ``coral2_queue_messages{queue}``: messages waiting (node queues summed as ``node``);
- ``coral2_outbox_backlog``: outbox entries Flux has not taken yet;
- ``coral2_answers_waiting``: node answers on their stream, not yet counted;
- ``coral2_ledger_pending``: sent tasks without an outcome;
- ``coral2_deadletters_total``: messages ever set aside as dead letters;
- ``coral2_task_failures_kept{task}``: task runs failed for good, the failures kept (it
  falls as they are cleared); ``coral2_task_failures_total{task}``: ever;
- ``coral2_transition_seconds{state}``: a histogram of the time from DWS marking a state
  ready to our move out of it (every worker adds to it in Redis);
- ``coral2_vni_pool{status}``: VNIs free, reserved and quarantined;
- ``coral2_node_workers_silent``: computes that need a node worker and have none alive
  (no heartbeat, ``pipeline.store.census``);
- ``coral2_hwcoll_reservations``: hardware-collective reservations tracked jobs hold;
- ``coral2_status``: the ``status`` verdict (0 OK, 1 WARNING, 2 CRITICAL), and the causes
  it folds together, each its own gauge: ``coral2_watcher_leading``, and as Unix
  timestamps (absent when there is none) ``coral2_beat_last_tick_timestamp_seconds``,
  ``coral2_queue_heartbeat_timestamp_seconds{queue}``,
  ``coral2_outbox_oldest_timestamp_seconds``, ``coral2_answers_oldest_timestamp_seconds``
  and ``coral2_vni_quarantine_oldest_timestamp_seconds``;
- ``coral2_up``: 1 when Redis answered the scrape, else 0;
- ``coral2_build_info{version}``: the release running (always 1);
- ``coral2_scrape_duration_seconds``, ``coral2_scrape_errors_total``: how long a scrape
  read the store, and how many scrapes Redis did not answer.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from prometheus_client.core import (
    REGISTRY,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from pipeline import __version__
from pipeline.cli import exporter_web, kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.cli.exporter_web import WebConfig
from pipeline.cli.status_flags import pipeline_flags, verdict
from pipeline.errors import StoreUnavailable
from pipeline.platform.nodework import expected_computes
from pipeline.platform.systemd import Watchdog, notify
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.report import PipelineView, pipeline_view, queue_lengths


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "exporter",
        help="serve Prometheus metrics of the pipeline at /metrics (read-only)",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--port", type=kinds.port(), default=9464, help="port (default 9464)")
    parser.add_argument(
        "--address",
        type=kinds.address,
        default="127.0.0.1",
        help="address to listen on, an IP address or a hostname (default 127.0.0.1)",
    )
    parser.add_argument(
        "--web.config.file",
        dest="web_config",
        type=kinds.FILE,
        metavar="FILE",
        help=(
            "TLS and basic authentication for /metrics, in the format of Prometheus's "
            "exporter toolkit (tls_server_config, basic_auth_users; docs/operations.md)"
        ),
    )
    parser.set_defaults(func=run)


class PipelineCollector(Collector):
    """The metrics, read afresh from the store at each scrape."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings, self.store = settings, store
        self.scrape_errors = 0
        # the mapping is read once; without node work in these settings, the computes
        # the lifecycle workers noted are read at each scrape (one HGET)
        self.computes, self.problem = expected_computes(settings)

    @property
    def nodes(self) -> list[str] | None:
        """The computes that must run a node worker (None: none known)."""
        if self.computes is not None or self.problem:
            return self.computes
        return self.store.expected_node_workers.read()

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("coral2_up", "1 when Redis answered the scrape")
        info = GaugeMetricFamily(
            "coral2_build_info", "the running release (always 1)", labels=["version"]
        )
        info.add_metric([__version__], 1)
        started = time.monotonic()
        try:
            metrics = list(self._read())
        except StoreUnavailable:
            up.add_metric([], 0)
            yield from (up, info)
            yield from self._scrape(started, failed=True)
            return
        up.add_metric([], 1)
        yield from (up, info)
        yield from metrics
        yield from self._scrape(started, failed=False)

    def _scrape(self, started: float, *, failed: bool) -> Iterator[Metric]:
        """How long this scrape's reads took, and how many scrapes failed since the start."""
        self.scrape_errors += failed
        yield _gauge(
            "coral2_scrape_duration_seconds",
            "how long the scrape took to read the job store",
            time.monotonic() - started,
        )
        errors = CounterMetricFamily(
            "coral2_scrape_errors", "scrapes Redis did not answer, since the exporter started"
        )
        errors.add_metric([], self.scrape_errors)
        yield errors

    def _read(self) -> Iterator[Metric]:
        nodes = self.nodes  # read once a scrape
        store, settings = self.store, self.settings
        prefix = settings.pipeline.queues.node_prefix
        view = pipeline_view(store, limit=10, nodes=nodes, node_queue_prefix=prefix)
        now = view.at
        yield _by(GaugeMetricFamily, "coral2_jobs", "tracked jobs by state", "state", view.states)
        yield _by(
            GaugeMetricFamily,
            "coral2_job_oldest_seconds",
            "how long the job longest in each state has gone unchanged",
            "state",
            {state: max(now - at, 0.0) for state, at in view.oldest_by_state.items()},
        )
        depths = _queue_depths(store, settings, view)
        what = "messages waiting in each queue"
        yield _by(GaugeMetricFamily, "coral2_queue_messages", what, "queue", depths)
        yield _gauge(
            "coral2_outbox_backlog", "outbox entries Flux has not taken", view.outbox_backlog
        )
        yield _gauge("coral2_answers_waiting", "node answers not yet counted", view.answers_waiting)
        yield _gauge("coral2_ledger_pending", "sent tasks without an outcome", view.ledger_pending)
        dead = CounterMetricFamily("coral2_deadletters", "messages ever set aside")
        dead.add_metric([], view.dead_letters_total)
        yield dead
        what = "task runs failed for good, kept"
        kept = view.failures_by_task
        yield _by(GaugeMetricFamily, "coral2_task_failures_kept", what, "task", kept)
        ever = store.metrics.failures_total()
        what = "task runs failed for good, ever"
        yield _by(CounterMetricFamily, "coral2_task_failures", what, "task", ever)
        refusals = store.metrics.refusals_total()
        what = "messages Flux refused, by kind"
        yield _by(CounterMetricFamily, "coral2_flux_refusals", what, "kind", refusals)
        transitions = HistogramMetricFamily(
            "coral2_transition_seconds",
            "from DWS marking a state ready to our move out of it",
            labels=["state"],
        )
        for state, histogram in store.metrics.transitions().items():
            buckets = [(_bound(b), n) for b, n in histogram.buckets]
            transitions.add_metric([state], buckets, sum_value=histogram.sum)
        yield transitions
        counts = store.vnipool.counts()
        yield _by(GaugeMetricFamily, "coral2_vni_pool", "VNIs by status", "status", counts)
        silent = len(view.node_workers.silent) if view.node_workers else 0
        yield _gauge("coral2_node_workers_silent", "computes with no node worker alive", silent)
        expected = len(nodes or ())
        what = "computes that must run a node worker"
        yield _gauge("coral2_node_workers_expected", what, expected)
        held = view.hwcoll_held
        yield _gauge("coral2_hwcoll_reservations", "hardware-collective reservations held", held)
        yield from _causes(store, view)
        rabbit = settings.rabbit
        timeouts = {
            "Setup": rabbit.setup_timeout,
            "PreRun": rabbit.prerun_timeout,
            "PostRun": rabbit.postrun_timeout,
        }
        flags = pipeline_flags(view, settings.pipeline.resend_after, nodes, timeouts)
        yield _gauge("coral2_status", "status verdict: 0 OK, 1 WARNING, 2 CRITICAL", verdict(flags))


def _causes(store: Store, view: PipelineView) -> Iterator[Metric]:
    """The causes ``coral2_status`` folds together, each a gauge its own alert reads.
    Each "since when" is a Unix timestamp, left out when there is none (no beat ever
    ticked, an empty outbox), as Prometheus's conventions have it: the rules take
    ``time() - …`` for an age."""
    leading = 1 if view.watcher_leader is not None else 0
    yield _gauge("coral2_watcher_leading", "1 while a watcher holds the lease", leading)
    yield _stamp(
        "coral2_beat_last_tick_timestamp_seconds",
        "when the leading beat last ticked (absent: no beat ever ticked)",
        view.beat_tick[0] if view.beat_tick else None,
    )
    yield _by(
        GaugeMetricFamily,
        "coral2_queue_heartbeat_timestamp_seconds",
        "when a worker of each queue last took beat's heartbeat",
        "queue",
        view.alive,
    )
    yield _stamp(
        "coral2_outbox_oldest_timestamp_seconds",
        "when the oldest outbox entry Flux has not taken was appended (absent: none)",
        view.outbox_oldest_at,
    )
    yield _stamp(
        "coral2_answers_oldest_timestamp_seconds",
        "when the oldest node answer not yet counted was appended (absent: none)",
        view.answers_oldest_at,
    )
    yield _stamp(
        "coral2_vni_quarantine_oldest_timestamp_seconds",
        "since when the VNIs longest in quarantine have waited for their nodes (absent: none)",
        store.vnipool.quarantined_since(),
    )


def _stamp(name: str, documentation: str, at: float | None) -> GaugeMetricFamily:
    """A timestamp gauge: no sample when ``at`` is None."""
    gauge = GaugeMetricFamily(name, documentation)
    if at:
        gauge.add_metric([], at)
    return gauge


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else f"{bound:g}"


def _by(
    family: type[GaugeMetricFamily] | type[CounterMetricFamily],
    name: str,
    documentation: str,
    label: str,
    values: Mapping[str, float],
) -> Metric:
    """A metric of one label, a sample per key of ``values`` (in the keys' order)."""
    metric = family(name, documentation, labels=[label])
    for key, value in sorted(values.items()):
        metric.add_metric([key], value)
    return metric


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, documentation)
    gauge.add_metric([], value)
    return gauge


def _queue_depths(store: Store, settings: Settings, view: PipelineView) -> dict[str, int]:
    """The lifecycle, timeouts and housekeeping queues' depths, and the nodes' summed
    (the census counted those)."""
    queues = settings.pipeline.queues
    names = [queues.lifecycle, queues.timeouts, queues.housekeeping]
    depths = queue_lengths(store, names)
    out = {name: depths.get(name, 0) for name in names}
    out["node"] = view.node_workers.queued if view.node_workers else 0
    return out


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT."""
    if not 0 < args.port < 65536:
        raise CommandError(f"--port must be between 1 and 65535, got {args.port}")
    web, base = exporter_web.load(args.web_config) if args.web_config else (WebConfig(), Path())
    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    REGISTRY.register(PipelineCollector(settings, store))
    try:
        server, thread = exporter_web.serve(REGISTRY, args.address, args.port, web, base)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.address}:{args.port}: {exc.strerror}") from exc
    scheme = "https" if web.tls_server_config else "http"
    auth = ", basic authentication" if web.basic_auth_users else ""
    print(f"serving metrics at {scheme}://{args.address}:{args.port}/metrics{auth}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    # under systemd: ready once it listens, the watchdog pinged while its server serves
    # (a Redis down is a scrape's coral2_up 0 and its own alert, not a dead exporter)
    notify("READY=1", f"STATUS=serving metrics at {args.address}:{args.port}")
    watchdog = Watchdog(thread.is_alive).start()
    try:
        while not done.wait(3600):
            time.sleep(0)
    except KeyboardInterrupt:
        pass
    notify("STOPPING=1")
    watchdog.stop()
    server.shutdown()
    return 0
