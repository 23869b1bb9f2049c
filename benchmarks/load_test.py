#!/usr/bin/env python3
"""A bounded load run against a served CF-RAG pipeline on 127.0.0.1.

For each concurrency level it sends a fixed number of POST /<pipeline>/run requests from that many
threads, then prints throughput, p50/p95 latency, counts by HTTP status, degraded and empty answers,
and the server's resident memory before and after (from /proc of the hayhooks process).

    # start a server itself (cfrag serve ARGS), mock generator: the framework ceiling
    python benchmarks/load_test.py --serve="--mock" --requests 200 --concurrency 1,4,16
    # 10% injected model failures, 500 requests at concurrency 16
    python benchmarks/load_test.py --serve="--mock --mock-failure-rate 0.1" --requests 500 --concurrency 16
    # the real embedded models, a few requests
    python benchmarks/load_test.py --serve="--pipeline cf_rag_fast" --pipeline cf_rag_fast \
        --requests 4 --concurrency 1,4
    # or an already running server (RSS needs its pid)
    python benchmarks/load_test.py --url http://127.0.0.1:1416 --pid 12345 --requests 100
    # 10% hostile bodies (haystack_cfrag.testing.hostile), RSS after 200 and 500 requests (issue #18)
    python benchmarks/load_test.py --serve="--mock --pipeline cf_rag --pipeline standard_rag --yaml cf_rag_fast" \
        --requests 500 --concurrency 16 --hostile-share 0.1 --rss-at 200,500 --fail-on-5xx
    # the same, with the worst-case cleaning payload always in flight (issue #23)
    python benchmarks/load_test.py --serve="--mock --pipeline cf_rag --pipeline standard_rag --yaml cf_rag_fast" \
        --requests 500 --concurrency 16 --hostile-share 0.1 --worst-case --fail-on-5xx
    # issue #43's bodies weighted up in the hostile share, peak RSS printed (a short run)
    python benchmarks/load_test.py --serve="--mock --pipeline cf_rag --pipeline standard_rag --yaml cf_rag_fast" \
        --requests 200 --concurrency 8 --hostile-share 0.3 --walk-weight 10 --worst-case --fail-on-5xx

The hostile share also holds the bodies of issue #43 (`walk_cases`: one 24,000-character key over a
list of 24,000 numbers, ~100 KB, which cost the server about +500 MB before the request walk was
made linear) on REST, chat and a YAML pipeline. Each level prints the server's peak RSS, sampled
with every /status probe, and its growth over the level.

A hostile request must get the status its case names (a 4xx); any other answer is counted and
named under `hostile_wrong`, and fails the run with --fail-on-5xx. Throughout each level a probe
sends GET /status every --status-interval seconds and reports the slowest answer: a request that
blocks the server's event loop shows there. With --fail-on-5xx, a /status slower than
--max-status-s (or not answered) fails the run too. --worst-case keeps the question that once
stalled the server (issue #23: one letter and ~520,000 combining marks of two classes, just under
the 1 MiB body limit) in flight, one after the other, for the whole level.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shlex
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

QUESTIONS = [
    "Who is the lead actor in The Dark Knight?",
    "Who played the Joker in The Dark Knight?",
    "Who directed The Dark Knight?",
    "Which film did Christopher Nolan make before The Dark Knight?",
    "Who won a posthumous Oscar for The Dark Knight?",
    "What city does Batman protect?",
    "Who plays Harvey Dent in The Dark Knight?",
    "In which year was The Dark Knight released?",
]


def rss_of(pid: int | None) -> int | None:
    """VmRSS of a process in bytes, or None."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


class Background:
    """Threads that run beside a level: the /status probe and, optionally, the worst-case payload sender."""

    def __init__(self, url: str, interval: float, worst_case: bytes | None, timeout: float,
                 pid: int | None = None) -> None:
        self.url, self.interval, self.worst_case, self.timeout = url, interval, worst_case, timeout
        self.pid, self.rss_peak = pid, rss_of(pid)
        self.stop = threading.Event()
        self.status_latencies: list[float] = []
        self.status_failures: Counter[str] = Counter()
        self.worst_case_statuses: Counter[str] = Counter()
        self.threads = [threading.Thread(target=self._probe, daemon=True)]
        if worst_case is not None:
            self.threads.append(threading.Thread(target=self._stall, daemon=True))

    def __enter__(self) -> Background:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=self.timeout)

    def _probe(self) -> None:
        with httpx.Client(timeout=self.timeout) as client:
            while not self.stop.is_set():
                start = time.perf_counter()
                try:
                    status = str(client.get(f"{self.url}/status").status_code)
                except httpx.HTTPError as exc:
                    status = f"error:{type(exc).__name__}"
                self.status_latencies.append(time.perf_counter() - start)
                rss = rss_of(self.pid)
                if rss is not None:
                    self.rss_peak = max(self.rss_peak or 0, rss)
                if status != "200":
                    self.status_failures[status] += 1
                self.stop.wait(self.interval)

    def _stall(self) -> None:
        with httpx.Client(timeout=self.timeout) as client:
            while not self.stop.is_set():
                try:
                    response = client.post(f"{self.url}/cf_rag/run", content=self.worst_case,
                                           headers={"content-type": "application/json"})
                    status = str(response.status_code)
                except httpx.HTTPError as exc:
                    status = f"error:{type(exc).__name__}"
                self.worst_case_statuses[status] += 1

    def summary(self) -> dict[str, Any]:
        lat = self.status_latencies
        return {
            "status_probes": len(lat),
            "status_max_s": round(max(lat), 3) if lat else None,
            "status_p95_s": round(percentile(lat, 95), 3) if lat else None,
            "status_failures": dict(self.status_failures),
            "worst_case_sent": sum(self.worst_case_statuses.values()) if self.worst_case is not None else None,
            "worst_case_statuses": dict(sorted(self.worst_case_statuses.items())),
            "rss_peak_mb": round(self.rss_peak / 2**20, 1) if self.rss_peak else None,
        }


def run_level(url: str, pipeline: str, n_requests: int, concurrency: int, timeout: float,
              extra: dict[str, Any], hostile: list[Any] | None = None, hostile_share: float = 0.0,
              seed: int = 0, pid: int | None = None, rss_at: tuple[int, ...] = (),
              status_interval: float = 0.25, worst_case: bytes | None = None) -> dict[str, Any]:
    """Send n_requests with `concurrency` threads; return the measurements.

    A share `hostile_share` of the requests (drawn with `seed`) is a random case of `hostile`;
    RSS is read after the numbers of completed requests in `rss_at`. Meanwhile /status is
    probed every `status_interval` seconds, and `worst_case` (a body) is posted back to back.
    """
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    hostile_statuses: Counter[str] = Counter()
    hostile_wrong: Counter[str] = Counter()
    rss: dict[int, float | None] = {}
    degraded = empty = bad_body = done = 0
    lock = threading.Lock()
    rng = random.Random(seed)
    plan = [rng.choice(hostile) if hostile and rng.random() < hostile_share else None for _ in range(n_requests)]
    counter = iter(range(n_requests))
    client = httpx.Client(timeout=timeout, limits=httpx.Limits(max_connections=concurrency + 2))

    def worker() -> None:
        nonlocal degraded, empty, bad_body, done
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            case = plan[i]
            start = time.perf_counter()
            try:
                if case is None:
                    payload = {"question": QUESTIONS[i % len(QUESTIONS)], **extra}
                    response = client.post(f"{url}/{pipeline}/run", json=payload)
                else:
                    response = client.post(f"{url}{case.path}", content=case.body, headers=list(case.headers))
                status = str(response.status_code)
                is_json = response.headers.get("content-type", "").startswith("application/json")
                body = response.json() if is_json else None
            except (httpx.HTTPError, ValueError) as exc:
                status, body = f"error:{type(exc).__name__}", None
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                statuses[status] += 1
                done += 1
                if done in rss_at:
                    now = rss_of(pid)
                    rss[done] = round(now / 2**20, 1) if now else None
                if case is not None:
                    hostile_statuses[status] += 1
                    if status != str(case.status) or case.message not in json.dumps(body):
                        hostile_wrong[f"{case.name}: {status}"] += 1
                elif status == "200":
                    result = (body or {}).get("result")
                    if not isinstance(result, dict) or "answer" not in result:
                        bad_body += 1
                    else:
                        degraded += bool(result.get("degraded"))
                        empty += not result["answer"]

    start = time.perf_counter()
    with Background(url, status_interval, worst_case, timeout, pid) as background, \
            ThreadPoolExecutor(max_workers=concurrency) as pool:
        for _ in range(concurrency):
            pool.submit(worker)
    wall = time.perf_counter() - start
    client.close()
    return {
        **background.summary(),
        "concurrency": concurrency,
        "requests": n_requests,
        "seconds": round(wall, 3),
        "throughput_rps": round(n_requests / wall, 3),
        "p50_s": round(percentile(latencies, 50), 3),
        "p95_s": round(percentile(latencies, 95), 3),
        "max_s": round(max(latencies), 3),
        "statuses": dict(sorted(statuses.items())),
        "degraded": degraded,
        "empty_answers": empty,
        "unexpected_bodies": bad_body,
        "hostile": sum(hostile_statuses.values()),
        "hostile_statuses": dict(sorted(hostile_statuses.items())),
        "hostile_wrong": dict(hostile_wrong),
        "rss_at_mb": rss,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--url", help="A running server, e.g. http://127.0.0.1:1416.")
    source.add_argument("--serve", help="Start `cfrag serve` with these arguments, written --serve=\"--mock ...\".")
    parser.add_argument("--pid", type=int, default=None, help="The server's pid, for RSS (with --url).")
    parser.add_argument("--pipeline", default="cf_rag")
    parser.add_argument("--requests", default="100", help="Requests per level, or one number per level: 4,4.")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds per request.")
    parser.add_argument("--warmup", type=int, default=1, help="Requests sent (and not counted) before the levels.")
    parser.add_argument("--params", default="{}", help='JSON added to each request, e.g. \'{"n_subsets": 2}\'.')
    parser.add_argument("--json-out", type=Path, default=None, help="Also write the results here.")
    parser.add_argument("--fail-on-5xx", action="store_true",
                        help="Exit 1 if any response is a 5xx or an error, or a hostile request got another answer.")
    parser.add_argument("--hostile-share", type=float, default=0.0,
                        help="Share of requests drawn from haystack_cfrag.testing.hostile (serve its pipelines).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the hostile draws.")
    parser.add_argument("--rss-at", default="", help="Read the server's RSS after these numbers of requests: 200,500.")
    parser.add_argument("--status-interval", type=float, default=0.25,
                        help="Seconds between the GET /status probes during each level.")
    parser.add_argument("--max-status-s", type=float, default=1.0,
                        help="With --fail-on-5xx: fail if a /status probe took longer (or failed).")
    parser.add_argument("--walk-weight", type=int, default=1,
                        help="How many times each of issue #43's bodies (walk_cases) is in the hostile draw.")
    parser.add_argument("--worst-case", action="store_true",
                        help="Keep the worst-case cleaning payload (haystack_cfrag.testing.hostile) in flight.")
    args = parser.parse_args(argv)
    rss_at = tuple(int(n) for n in args.rss_at.split(",") if n.strip())

    levels = [int(c) for c in args.concurrency.split(",")]
    counts = [int(n) for n in args.requests.split(",")]
    counts = counts * len(levels) if len(counts) == 1 else counts
    if len(counts) != len(levels):
        parser.error("--requests needs one number, or one per concurrency level")
    extra = json.loads(args.params)

    with contextlib.ExitStack() as stack:
        if args.serve:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/ (the load helper)
            from tests.server import served  # noqa: PLC0415

            pipelines = [args.pipeline]
            server = stack.enter_context(served(shlex.split(args.serve), expect=pipelines, timeout=900))
            url, pid = server.url, server.hayhooks_pid()
            print(f"[load] started cfrag serve {args.serve} at {url} (hayhooks pid {pid}, log {server.log})")
        else:
            url, pid = args.url.rstrip("/"), args.pid
        for _ in range(args.warmup):
            httpx.post(f"{url}/{args.pipeline}/run", json={"question": QUESTIONS[0], **extra}, timeout=args.timeout)
        hostile = None
        if args.hostile_share:
            from haystack_cfrag.testing.hostile import all_hostile_requests  # noqa: PLC0415

            marker = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "deploy-ran.txt"
            hostile = all_hostile_requests(str(marker)) + walk_cases() * max(1, args.walk_weight)
        worst_case = None
        if args.worst_case:
            from haystack_cfrag.serving.middleware import MAX_BODY_BYTES  # noqa: PLC0415
            from haystack_cfrag.testing.hostile import worst_case_cleaning  # noqa: PLC0415

            worst_case = worst_case_cleaning((MAX_BODY_BYTES - 100) // 4)  # two UTF-8 bytes a mark
        results = []
        for level, n in zip(levels, counts, strict=True):
            before = rss_of(pid)
            row = run_level(url, args.pipeline, n, level, args.timeout, extra, hostile, args.hostile_share,
                            args.seed, pid, rss_at, args.status_interval, worst_case)
            if hostile is not None:
                row["deploy_code_ran"] = marker.exists()
            row["rss_before_mb"] = round(before / 2**20, 1) if before else None
            after = rss_of(pid)
            row["rss_after_mb"] = round(after / 2**20, 1) if after else None
            results.append(row)
            print(format_row(row), flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps({"pipeline": args.pipeline, "serve": args.serve, "levels": results},
                                            indent=2))
    server_errors = sum(v for row in results for k, v in row["statuses"].items() if k.startswith(("5", "error")))
    wrong = sum(sum(row["hostile_wrong"].values()) + bool(row.get("deploy_code_ran")) for row in results)
    worst_wrong = sum(v for row in results for k, v in row["worst_case_statuses"].items() if k != "422")
    slowest = max((row["status_max_s"] or 0.0 for row in results), default=0.0)
    slow = slowest > args.max_status_s or any(row["status_failures"] for row in results)
    print(f"[load] 5xx or transport errors: {server_errors}; hostile requests answered otherwise than their case: "
          f"{wrong}; slowest /status: {slowest:.3f} s (limit {args.max_status_s} s)"
          + (f"; worst-case payloads not refused with 422: {worst_wrong}" if args.worst_case else ""))
    return 1 if args.fail_on_5xx and (server_errors or wrong or worst_wrong or slow) else 0


def walk_cases() -> list[Any]:
    """Issue #43's bodies: a 24,000-character key over 24,000 numbers (~100 KB), refused with a 422 (before
    the linear request walk, each cost the server about +500 MB); one ends in NaN, so the walk names it."""
    from haystack_cfrag.testing.hostile import Hostile  # noqa: PLC0415

    key, numbers = "k" * 24_000, [0] * 24_000
    shape = json.dumps({key: numbers}).encode()
    nan = json.dumps({"question": QUESTIONS[0], key: numbers})[:-2].encode() + b", NaN]}"
    messages = [{"role": "user", "content": QUESTIONS[0]}]
    chat = json.dumps({"model": "cf_rag", "messages": messages, key: numbers})
    return [
        Hostile("walk: long key over a long list (REST)", "/cf_rag/run", shape, 422, "Unknown field(s)"),
        Hostile("walk: ... ending in NaN (REST)", "/cf_rag/run", nan, 422, "must be a finite number"),
        Hostile("walk: long key over a long list (chat)", "/v1/chat/completions", chat.encode(), 422,
                "Unknown field(s)"),
        Hostile("walk: long key over a long list (YAML pipeline)", "/cf_rag_fast_yaml/run", shape, 422,
                "Unknown field(s)"),
    ]


def format_row(row: dict[str, Any]) -> str:
    """One line per level."""
    return (f"c={row['concurrency']:>3} n={row['requests']:>4}  {row['throughput_rps']:8.2f} req/s  "
            f"p50 {row['p50_s']:7.3f} s  p95 {row['p95_s']:7.3f} s  max {row['max_s']:7.3f} s  "
            f"status {row['statuses']}  degraded {row['degraded']}  empty {row['empty_answers']}  "
            f"odd {row['unexpected_bodies']}  RSS {row['rss_before_mb']} → {row['rss_after_mb']} MB"
            + (f"\n      hostile {row['hostile']}: {row['hostile_statuses']}  wrong {row['hostile_wrong'] or 0}  "
               f"deploy code ran: {row.get('deploy_code_ran')}" if row["hostile"] else "")
            + (f"\n      RSS after n requests: {row['rss_at_mb']} MB" if row["rss_at_mb"] else "")
            + (f"\n      peak RSS {row['rss_peak_mb']} MB: "
               f"+{row['rss_peak_mb'] - row['rss_before_mb']:.1f} MB over the level"
               if row.get("rss_peak_mb") and row["rss_before_mb"] else "")
            + f"\n      /status probes {row['status_probes']}: max {row['status_max_s']} s, "
              f"p95 {row['status_p95_s']} s, failed {row['status_failures'] or 0}"
            + (f"\n      worst-case cleaning payloads in flight: {row['worst_case_sent']} sent, "
               f"{row['worst_case_statuses']}" if row["worst_case_sent"] is not None else ""))


if __name__ == "__main__":
    sys.exit(main())
