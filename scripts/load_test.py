#!/usr/bin/env python3
"""A bounded load run against a served CF-RAG pipeline on 127.0.0.1.

For each concurrency level it sends a fixed number of POST /<pipeline>/run requests from that many
threads, then prints throughput, p50/p95 latency, counts by HTTP status, degraded and empty answers,
and the server's resident memory before and after (from /proc of the hayhooks process).

    # start a server itself (cfrag serve ARGS), mock generator: the framework ceiling
    python scripts/load_test.py --serve="--mock" --requests 200 --concurrency 1,4,16
    # 10% injected model failures, 500 requests at concurrency 16
    python scripts/load_test.py --serve="--mock --mock-failure-rate 0.1" --requests 500 --concurrency 16
    # the real embedded models, a few requests
    python scripts/load_test.py --serve="--pipeline cf_rag_fast" --pipeline cf_rag_fast --requests 4 --concurrency 1,4
    # or an already running server (RSS needs its pid)
    python scripts/load_test.py --url http://127.0.0.1:1416 --pid 12345 --requests 100
    # 10% hostile bodies (haystack_cfrag.testing.hostile), RSS after 200 and 500 requests (issue #18)
    python scripts/load_test.py --serve="--mock --pipeline cf_rag --pipeline standard_rag --yaml cf_rag_fast" \
        --requests 500 --concurrency 16 --hostile-share 0.1 --rss-at 200,500 --fail-on-5xx

A hostile request must get the status its case names (a 4xx); any other answer is counted and
named under `hostile_wrong`, and fails the run with --fail-on-5xx.
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


def run_level(url: str, pipeline: str, n_requests: int, concurrency: int, timeout: float,
              extra: dict[str, Any], hostile: list[Any] | None = None, hostile_share: float = 0.0,
              seed: int = 0, pid: int | None = None, rss_at: tuple[int, ...] = ()) -> dict[str, Any]:
    """Send n_requests with `concurrency` threads; return the measurements.

    A share `hostile_share` of the requests (drawn with `seed`) is a random case of `hostile`;
    RSS is read after the numbers of completed requests in `rss_at`.
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
                    response = client.post(f"{url}{case.path}", content=case.body,
                                           headers={"content-type": "application/json"})
                status = str(response.status_code)
                body = response.json() if response.headers.get("content-type", "").startswith("application/json") else None
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
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for _ in range(concurrency):
            pool.submit(worker)
    wall = time.perf_counter() - start
    client.close()
    return {
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
            from haystack_cfrag.testing.server import served  # noqa: PLC0415

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
            from haystack_cfrag.testing.hostile import hostile_requests  # noqa: PLC0415

            marker = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "deploy-ran.txt"
            hostile = hostile_requests(str(marker))
        results = []
        for level, n in zip(levels, counts, strict=True):
            before = rss_of(pid)
            row = run_level(url, args.pipeline, n, level, args.timeout, extra, hostile, args.hostile_share,
                            args.seed, pid, rss_at)
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
    print(f"[load] 5xx or transport errors: {server_errors}; hostile requests answered otherwise than their case: "
          f"{wrong}")
    return 1 if args.fail_on_5xx and (server_errors or wrong) else 0


def format_row(row: dict[str, Any]) -> str:
    """One line per level."""
    return (f"c={row['concurrency']:>3} n={row['requests']:>4}  {row['throughput_rps']:8.2f} req/s  "
            f"p50 {row['p50_s']:7.3f} s  p95 {row['p95_s']:7.3f} s  max {row['max_s']:7.3f} s  "
            f"status {row['statuses']}  degraded {row['degraded']}  empty {row['empty_answers']}  "
            f"odd {row['unexpected_bodies']}  RSS {row['rss_before_mb']} → {row['rss_after_mb']} MB"
            + (f"\n      hostile {row['hostile']}: {row['hostile_statuses']}  wrong {row['hostile_wrong'] or 0}  "
               f"deploy code ran: {row.get('deploy_code_ran')}" if row["hostile"] else "")
            + (f"\n      RSS after n requests: {row['rss_at_mb']} MB" if row["rss_at_mb"] else ""))


if __name__ == "__main__":
    sys.exit(main())
