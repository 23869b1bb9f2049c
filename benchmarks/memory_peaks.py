"""Peak resident memory of `cfrag ask` (every query pipeline), `cfrag serve` (all of them, one question each)
and `cfrag eval` (four systems), each in a process of its own, and the server's start-up time.

    python benchmarks/memory_peaks.py OUT_DIR [--only ask,serve,eval,startup] [--store SPEC] [--mock]

`ask`: `/usr/bin/time -v cfrag ask QUESTION --pipeline P` (its "Maximum resident set size").
`serve`: `cfrag serve` with every query pipeline; one question to each over HTTP, then the peak resident
memory (VmHWM, /proc) of its processes summed (the supervisor and the server). `startup`: seconds from the
command to the first 200 of /status, then one question to each graph pipeline (its first answer, timed).
`eval`: `/usr/bin/time -v cfrag eval` of four systems on the first 3 trap_dev questions, pooled, reply cache
on (the default). One JSON line per measurement in OUT_DIR/peaks.jsonl (resumable: a measured line is not
measured again).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

QUESTION = "Which is the tallest mountain on Earth when measured from base to summit?"
EVAL_SYSTEMS = "standard_rag,cf_rag_auto,cer_auto,cdf_rag_auto"
GRAPH_PIPELINES = ("causal_rag", "causal_rag_auto", "cdf_rag", "cdf_rag_auto")
CFRAG = str(Path(sys.executable).with_name("cfrag"))  # the cfrag of this interpreter's environment


def peak_of(stderr: str) -> float | None:
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return round(int(m.group(1)) / 1024 / 1024, 3) if m else None


def timed(cmd: list[str], env: dict[str, str], timeout: int = 1800) -> dict:
    start = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env, timeout=timeout)
    return {"rc": run.returncode, "peak_gb": peak_of(run.stderr), "seconds": round(time.perf_counter() - start, 1),
            "tail": (run.stdout.strip().splitlines() or [""])[0][:200]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, body: dict | None = None, timeout: float = 900) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310  (loopback only)
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (/proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            todo.extend(int(c) for c in task.read_text().split())
    return out


def hwm_gb(pid: int) -> float:
    """A process's peak resident memory (VmHWM), GB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return round(int(line.split()[1]) / 1024 / 1024, 3)
    return 0.0


def serve(pipelines: list[str], env: dict[str, str], store: str | None, mock: bool, ask: list[str]) -> dict:
    port = free_port()
    cmd = [CFRAG, "serve", "--port", str(port)] + [a for p in pipelines for a in ("--pipeline", p)]
    cmd += ["--store", store] if store else []
    cmd += ["--mock"] if mock else []
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready = None
    try:
        while time.perf_counter() - start < 1200:
            if proc.poll() is not None:
                return {"rc": proc.returncode, "error": proc.stderr.read()[-500:]}
            try:
                if get(f"http://127.0.0.1:{port}/status", timeout=2)[0] == 200:
                    ready = time.perf_counter() - start
                    break
            except OSError:
                pass
            time.sleep(0.5)
        answers = {}
        for name in ask:
            t = time.perf_counter()
            code, body = get(f"http://127.0.0.1:{port}/{name}/run", {"question": QUESTION})
            answers[name] = {"status": code, "seconds": round(time.perf_counter() - t, 1),
                             "answer": str(body.get("result", body).get("answer", ""))[:60] if body else ""}
        peaks = {pid: hwm_gb(pid) for pid in tree(proc.pid)}  # `cfrag serve` supervises the server process
        return {"ready_s": round(ready, 1) if ready else None, "peak_gb": round(sum(peaks.values()), 3),
                "peak_gb_by_process": list(peaks.values()), "answers": answers}
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", default="ask,serve,eval,startup")
    parser.add_argument("--store", default=None)
    parser.add_argument("--mock", action="store_true")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from haystack_cfrag.registry import query_pipelines

    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False", "TQDM_DISABLE": "1"}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "peaks.jsonl"
    done = {json.loads(x)["what"] for x in path.read_text().splitlines()} if path.exists() else set()

    def record(what: str, result: dict) -> None:
        line = {"what": what, "label": args.label, **result}
        print(json.dumps(line), flush=True)
        with path.open("a") as fh:
            fh.write(json.dumps(line) + "\n")

    only = args.only.split(",")
    store = ["--store", args.store] if args.store else []
    if "ask" in only:
        for name in query_pipelines():
            what = f"ask {name}"
            if what not in done:
                record(what, timed([CFRAG, "ask", QUESTION, "--pipeline", name, *store], env))
    if "serve" in only and "serve all" not in done:
        names = list(query_pipelines())
        record("serve all", serve(names, env, args.store, args.mock, names))
    if "startup" in only and "startup all" not in done:
        record("startup all", serve(list(query_pipelines()), env, args.store, True, list(GRAPH_PIPELINES)))
    if "eval" in only and "eval 4 systems" not in done:
        folder = args.out / "eval"
        data = Path(__file__).resolve().parents[2] / "shared/data/trap_dev.jsonl"
        record("eval 4 systems", timed([CFRAG, "eval", str(data), "--limit", "3", "--corpus", "pooled",
                                        "--systems", EVAL_SYSTEMS, "--out", str(folder)], env, timeout=5400))


if __name__ == "__main__":
    main()
