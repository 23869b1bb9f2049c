"""Does today's code ask the model what an archived run asked, and answer the same? Re-run a committed run's
systems from its reply cache alone and compare, call by call.

    python benchmarks/analysis/replay_check.py docs/results/cer_trap_dev --systems standard_rag,cer \
        --out runs/replay_check/cer_trap_dev [--limit 8] [--graph-extractor llm]

The archive is unpacked into `--out` (`replay_folder.py`: its records, metadata and the whole reply cache),
its records moved aside, and `cfrag eval` runs the named systems again on the archived data file, questions
and models (from its metadata). A prompt that changed misses the reply cache: the model then really runs
(slow) and the reply cache grows. The check passes when no reply was added (every cached call asked what it
asked then: the same prompts, call by call, with the same generation arguments), each system made as many
LLM calls as the archived run on those questions, with at least as many cache hits (a replay of a run that
made its calls hits them all; a call no cache serves misses in both), and every answer equals the archived
one. Prints one row per system and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_folder import replay_folder  # noqa: E402
from run_folder import read_run_records  # noqa: E402


def _lines(path: Path) -> int:
    return sum(1 for _ in path.open(encoding="utf-8")) if path.exists() else 0


def compare(archived: list[dict], fresh: list[dict]) -> dict[str, dict[str, int]]:
    """Per system: questions re-run, answers equal to the archived ones, LLM calls and cache hits, and the
    archived run's calls and hits on the same questions (a call no cache serves, e.g. CDF-RAG's, is in both).

    >>> old = [{"system": "s", "qid": "a", "answer": "x", "llm": {"calls": 2}, "cache_hits": 1},
    ...        {"system": "s", "qid": "b", "answer": "y", "llm": {"calls": 1}, "cache_hits": 1}]
    >>> new = [{"system": "s", "qid": "a", "answer": "x", "llm": {"calls": 2}, "cache_hits": 1},
    ...        {"system": "s", "qid": "b", "answer": "z", "llm": {"calls": 1}, "cache_hits": 0}]
    >>> compare(old, new)
    {'s': {'questions': 2, 'same_answer': 1, 'calls': 3, 'hits': 1, 'archived_calls': 3, 'archived_hits': 2}}
    """
    before = {(r["system"], r["qid"]): r for r in archived if not r.get("inject")}
    rows: dict[str, dict[str, int]] = {}
    for r in fresh:
        row = rows.setdefault(r["system"], {"questions": 0, "same_answer": 0, "calls": 0, "hits": 0,
                                            "archived_calls": 0, "archived_hits": 0})
        old = before.get((r["system"], r["qid"]))
        row["questions"] += 1
        row["same_answer"] += int(old is not None and old.get("answer") == r.get("answer"))
        row["calls"] += int((r.get("llm") or {}).get("calls") or 0)
        row["hits"] += int(r.get("cache_hits") or 0)
        row["archived_calls"] += int(((old or {}).get("llm") or {}).get("calls") or 0)
        row["archived_hits"] += int((old or {}).get("cache_hits") or 0)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="a committed run folder (docs/results/RUN)")
    parser.add_argument("--systems", required=True, help="the archived systems to re-run (comma-separated)")
    parser.add_argument("--out", type=Path, required=True, help="a new or empty folder")
    parser.add_argument("--limit", type=int, help="re-run the first N questions only (the store stays the archived "
                        "run's: its --limit questions' passages)")
    parser.add_argument("--graph-extractor", help="as the archived run had it (its README says)")
    parser.add_argument("--data", help="the data file (default: the archived metadata's path)")
    args = parser.parse_args(argv)
    replay_folder(args.src, args.out)
    meta = json.loads((args.out / "metadata.json").read_text(encoding="utf-8"))
    config = meta.get("config") or {}
    archived = read_run_records(args.out)
    aside = args.out / "archived"
    aside.mkdir()
    for name in ("records.jsonl", "results.json", "report.md", ".cfrag-eval.json"):
        if (args.out / name).exists():
            shutil.move(args.out / name, aside / name)
    cache = args.out / "llm_cache.jsonl"
    replies = _lines(cache)
    command = [shutil.which("cfrag") or "cfrag", "eval", args.data or config["data"], "--out", str(args.out),
               "--systems", args.systems, "--limit", str(config.get("limit") or 100),
               "--corpus", config.get("corpus") or "pooled", "--format", config.get("format") or "auto",
               "--llm", config.get("llm") or "embedded:qwen2.5-coder-1.5b-instruct",
               "--embedder", config.get("embedder") or "embedded:all-MiniLM-L6-v2",
               "--max-tokens", str(config.get("max_tokens") or 256), "--no-plots"]
    if args.limit or config.get("main_limit"):  # the first N questions; the pooled store keeps all of --limit
        command += ["--main-limit", str(args.limit or config["main_limit"])]
    if config.get("offset"):
        command += ["--offset", str(config["offset"])]
    if config.get("scorer"):
        command += ["--scorer", config["scorer"]]
    if args.graph_extractor:
        command += ["--graph-extractor", args.graph_extractor]
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, env={**os.environ, "TQDM_DISABLE": "1"}, check=False)
    if done.returncode != 0:
        print(f"replay_check: cfrag eval exited {done.returncode}", file=sys.stderr)
        return 2
    rows = compare(archived, read_run_records(args.out))
    added = _lines(cache) - replies
    ok = added == 0 and all(r["same_answer"] == r["questions"] and r["calls"] == r["archived_calls"]
                            and r["hits"] >= min(r["calls"], r["archived_hits"]) for r in rows.values())
    print(f"{'system':40} {'questions':>9} {'same answer':>11} {'LLM calls':>9} {'cache hits':>10} {'archived':>13}")
    for system, r in rows.items():
        print(f"{system:40} {r['questions']:>9} {r['same_answer']:>11} {r['calls']:>9} {r['hits']:>10} "
              f"{r['archived_calls']:>6}/{r['archived_hits']:<6}")
    print(f"replies added to the cache: {added}; {'the same prompts and answers' if ok else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
