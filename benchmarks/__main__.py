"""``python -m benchmarks``: print every benchmark figure."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from benchmarks import (
    compare,
    durability,
    elcap,
    exporter,
    fanout,
    health,
    hwcoll,
    killed_worker,
    lifecycle,
    nodeconn,
    platform,
    redis_scale,
    startup,
    trust,
    vnipool,
)


def main() -> None:
    """Run the benchmarks and print one table."""
    console = Console(width=150)
    table = Table(title="coral2-pipeline benchmarks")
    for column in ("benchmark", "figure", "target"):
        table.add_column(column)
    figures: dict[str, float] = {}  # compared with docs/performance.md's at the end
    up = startup.bench_startup()
    table.add_row(
        "start of the per-job commands: process start → first Redis command, against "
        "`python -c 'import redis'` doing the same, same run",
        f"baseline {up['baseline'] * 1000:.0f} ms; "
        + ", ".join(
            f"{name} {up[name] * 1000:.0f} ms ({up[f'{name} ratio']:.2f}x)"
            for name in ("flux-prolog", "hook", "status")
        ),
        "≤ 3x each",
    )
    for name in ("flux-prolog", "hook", "status"):
        figures[f"startup.{name}.ratio"] = up[f"{name} ratio"]
    killed = killed_worker.bench_killed_worker()
    figures["killed_worker.later_s"] = killed["later_s"]
    table.add_row(
        "a worker SIGKILLed with a batch in flight: its slowest job against the same batch "
        "without a kill",
        f"{killed['later_s']:.1f} s later ({killed['slowest_s']:.1f} s vs median "
        f"{killed['sibling_s']:.1f} s)",
        "≤ 15 s",
    )
    for d in durability.bench_durability():
        figures[f"durability.{d.policy}.jobs_per_s"] = d.jobs_per_s
        figures[f"durability.{d.policy}.live_p99_ms"] = d.live_p99_ms
        table.add_row(
            f"the lifecycle batch under Redis appendfsync {d.policy} (deploy/redis)",
            f"{d.jobs_per_s:.1f} jobs/s saturated; transition p99 {d.p99_ms:.0f} ms "
            f"saturated, {d.live_p99_ms:.0f} ms live",
            "the price of always, measured",
        )
    ms = elcap.bench_breakdowns()
    figures["breakdowns.ms"] = ms
    table.add_row(
        "apply_breakdowns + build_allocation_sets, whole-system lustre+xfs job",
        f"{ms:.2f} ms",
        "< 20 ms",
    )
    for label, computes, target in (
        ("dws2jgf, quarter system", elcap.COMPUTES // 4, "upstream 6.4 s, 350 MiB"),
        ("dws2jgf, whole system", elcap.COMPUTES, "≤ 6 s, ≤ 700 MiB (upstream 30 s, 1.32 GiB)"),
    ):
        result = elcap.bench_dws2jgf(computes)
        part = "whole" if computes == elcap.COMPUTES else "quarter"
        figures[f"dws2jgf.{part}.s"] = result["seconds"]
        table.add_row(
            label,
            f"{result['seconds']:.2f} s, {result['peak_mib']:.0f} MiB peak, "
            f"{result['vertices']:,} vertices, {result['bytes']:,} bytes",
            target,
        )
    r = health.bench_replay()
    figures["health.replay.s"] = r["seconds"]
    table.add_row(
        f"resource eventlog replay: {r['events']:,.0f} events over {health.NODES:,} nodes, "
        "parsed line by line",
        f"{r['seconds']:.2f} s, {r['peak_mib']:.1f} MiB peak (beside the "
        f"{r['text_mib']:.0f} MiB eventlog)",
        "< 5 s",
    )
    s = health.bench_storm()
    figures["health.storm.per_event"] = s["per_event"]
    table.add_row(
        f"{health.RABBITS} rabbits flapping, each Storage event twice (watch + resync)",
        f"{s['per_event']:.2f} outbox entries per event (fewest {s['fewest_per_event']:.2f}; "
        f"coral2_dws {s['upstream_per_event']:.2f}), {s['events_per_s']:.0f} events/s",
        "the fewest",
    )
    h = hwcoll.bench_hwcoll()
    figures["hwcoll.p99_ms"] = h["p99_ms"]
    table.add_row(
        f"hardware collectives: {h['jobs']:.0f} eligible jobs, fabric manager at 200 ms then "
        "down 30 s",
        f"added start delay p50 {h['p50_ms']:.0f} ms, p99 {h['p99_ms']:.0f} ms, max "
        f"{h['max_ms']:.0f} ms (answering: p50 {h['up_p50_ms']:.0f} / p99 "
        f"{h['up_p99_ms']:.0f} ms; down: p50 {h['down_p50_ms']:.0f} / p99 "
        f"{h['down_p99_ms']:.0f} ms); {h['reserved']:.0f} reserved; reservations left "
        f"after it returns: {h['left']:.0f}",
        f"p99 < timeout ({h['timeout_ms']:.0f} ms); 0 left",
    )
    t = trust.bench_trust()
    figures["trust.load_s"] = t["load_s"]
    figures["trust.verify_us"] = t["verify_us"]
    table.add_row(
        f"one identity per node: issue a pair; load {t['nodes']:,.0f} node certificates "
        "(CA-checked); verify and decode one answer",
        f"{t['issue_s'] * 1000:.0f} ms a node; {t['load_s']:.2f} s; {t['verify_us']:.0f} µs",
        "load < 10 s at start",
    )
    table.add_row(
        f"the management side signs a message per node: {t['nodes']:,.0f} nodes, "
        "RSA-2048 against EC P-256 management key",
        f"{t['sign_rsa_us'] * t['nodes'] / 1e6:.2f} s against "
        f"{t['sign_ec_us'] * t['nodes'] / 1e6:.2f} s",
        "EC for the management key",
    )
    cpu = platform.broker_message_cpu()
    figures["broker.message_us"] = cpu["configured"]
    table.add_row(
        "one broker message: put + get + ack, client CPU",
        f"{cpu['ours']:.0f} µs with our broker transport, {cpu['kombu']:.0f} µs with kombu's "
        f"(both with ack emulation); {cpu['configured']:.0f} µs as configured (none)",
        "",
    )
    ceiling = platform.celery_ceiling()
    figures["celery.ceiling_tasks_per_s"] = ceiling
    table.add_row(
        "Celery no-op round trip, prefork ×2, our app config (the ceiling)",
        f"{ceiling:.0f} tasks/s",
        "bare Celery on 2 cores: ≈630/s",
    )
    before, settled, tracked = platform.collection_pause()
    table.add_row(
        f"a management process's full collection (its imports: {tracked:,} objects)",
        f"{before:.1f} ms before its heap settles, {settled:.1f} ms after",
        "",
    )
    gets, patches = platform.api_rates()
    figures["api.gets_per_s"], figures["api.patches_per_s"] = gets, patches
    table.add_row(
        "simulated API server, one official client",
        f"{gets:.0f} GET/s, {patches:.0f} merge-PATCH/s",
        "≥ 1,000 GET/s, ≥ 800 PATCH/s",
    )
    v = vnipool.bench_vnipool()
    figures["vnipool.ratio"] = v["ratio"]
    table.add_row(
        "VNI pool: reserve(2)+release pairs, 8 clients",
        f"{v['pairs_per_s']:.0f}/s, {v['ratio']:.0%} of raw EVALSHA pairs "
        f"({v['raw_pairs_per_s']:.0f}/s)",
        "≥ 50 % of raw",
    )
    for nodes, target in ((100, ""), (1000, ""), (4000, "≤ 2 s, "), (11136, "≤ 5 s, ")):
        r = fanout.bench_fanout(nodes)
        figures[f"fanout.{nodes}.s"] = r["pipeline"]
        table.add_row(
            f"one job's node prolog on {nodes:,} emulated nodes, signed",
            f"pipeline {r['pipeline']:.2f} s (send {r['send']:.2f} + count "
            f"{r['count']:.2f}), epilog {r['epilog']:.2f} s, "
            f"{r['cpu_ms_per_node']:.2f} ms CPU per node; "
            f"{r['pushes_per_node']:.1f} broker pushes per node, {r['from_nodes']:.0f} API "
            "requests from nodes",
            f"{target}0 API requests from nodes",
        )
    n = nodeconn.bench_node_connections()
    figures["nodeconn.commands_per_job"] = n["commands_per_job"]
    table.add_row(
        "one node worker at the broker: idle, then 50 jobs' prolog + epilog",
        f"idle {n['idle_connections']:.0f} connections, {n['idle_commands_per_s']:.2f} "
        f"commands/s; busy at most {n['busy_connections']:.0f} connections, "
        f"{n['commands_per_job']:.1f} commands per job",
        "≤ 2 connections, nothing periodic but the blocking read",
    )
    p50, p99 = platform.watch_to_observe()
    figures["watch.p99_ms"] = p99
    table.add_row("watch event → dws.observe start", f"p50 {p50:.1f} ms, p99 {p99:.1f} ms", "")
    f = lifecycle.bench_lifecycle()
    figures["lifecycle.ratio"] = f.ratio
    figures["lifecycle.live_p99_ms"] = f.live_p99_ms
    figures["lifecycle.cpu_ms_per_job"] = sum(f.cpu_ms_per_job.values())
    figures["lifecycle.tasks_per_job"] = f.tasks_per_job
    table.add_row(
        f"lifecycle, saturated: {f.jobs} xfs jobs, ≤200 in flight, zero-latency DWS",
        f"{f.jobs_per_s:.1f} jobs/s, {f.tasks_per_job:.1f} tasks/job, {f.ratio:.0%} of the "
        f"Celery ceiling ({f.ceiling_tasks_per_s:.0f} tasks/s, the median of six samples; "
        f"{f.ratio_to_best:.0%} of the best); queueing latency p50 "
        f"{f.p50_ms:.0f} ms / p99 {f.p99_ms:.0f} ms; leaks: {len(f.leaks)}",
        "≥ 50 % of the ceiling",
    )
    table.add_row(
        f"lifecycle, live: 200 jobs kept in flight, {f.live_jobs} jobs of 60 s",
        f"transition p50 {f.live_p50_ms:.0f} ms / p99 {f.live_p99_ms:.0f} ms "
        f"({f.live_transitions} transitions)",
        "p99 ≤ 50 ms",
    )
    table.add_row(
        "lifecycle: the worker after warm-up → after both phases",
        "{} → {} threads, ".format(*f.worker_threads)
        + "{:.0f} → {:.0f} MiB resident".format(*f.worker_rss_mib),
        "no growth with jobs run",
    )
    table.add_row(
        "lifecycle, saturated: CPU ms per job, by process",
        f"{lifecycle.cpu_line(f)}; {f.cores_busy:.2f} cores busy",
        "",
    )
    table.add_row(
        "lifecycle, saturated: CPU ms per task against a no-op's, same run",
        lifecycle.task_cpu_line(f),
        "",
    )
    r = redis_scale.bench_redis_scale()
    figures["redis.commands_per_job"] = r["total_per_job"]
    table.add_row(
        "Redis at whole-machine scale: commands per xfs job; memory per job in flight; "
        f"{redis_scale.IN_FLIGHT:,} jobs in flight and the node workers of "
        f"{redis_scale.NODES:,} computes",
        f"{r['total_per_job']:.0f} commands; {r['bytes_per_job'] / 1024:.1f} KiB; "
        f"{r['in_flight_mib']:.0f} MiB and {r['node_workers_mib']:.0f} MiB",
        "maxmemory 4gb holds it",
    )
    x = exporter.bench_exporter()
    figures["exporter.scrape_ms"] = x["scrape_p50_ms"]
    figures["exporter.status_ms"] = x["status_p50_ms"]
    figures["exporter.pool_ms"] = x["pool_p50_ms"]
    table.add_row(
        f"monitoring at the whole machine's size: one exporter scrape, one `status`, one "
        f"`slingshot pool`; {x['nodes']:,.0f} computes with their node workers connected, "
        f"{x['jobs']:,.0f} jobs in flight (two VNIs each of 64,512)",
        f"scrape {x['scrape_p50_ms']:.0f} ms CPU (max {x['scrape_max_ms']:.0f}) + "
        f"{x['scrape_redis_ms']:.0f} ms in Redis; status {x['status_p50_ms']:.0f} ms "
        f"(a whole process {x['status_process_ms']:.0f} ms); pool {x['pool_p50_ms']:.0f} ms, "
        f"--json {x['pool_json_p50_ms']:.0f} ms",
        "scrape ≤ 50 ms CPU, status ≤ 200 ms",
    )
    console.print(table)
    print("\nagainst docs/performance.md (a figure more than 30 % worse is a regression):")
    for line in compare.report(figures):
        print("  " + line)


if __name__ == "__main__":
    main()
