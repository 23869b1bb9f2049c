"""Issue 23, the `cfrag` command: the real command (a subprocess) on a careless or hostile user's input.

- `cfrag index FOLDER` reads only the documented types; hidden files and folders, other types
  and links out of the folder are skipped and counted; a file named without a known suffix is
  an error (no secret becomes a passage);
- no command replaces a file it did not write: `eval --out` a user's folder, `index --store` a
  user's JSON (or one named like the store's temporary file);
- a store that is not one (a user's JSON, a folder) is refused in one line, exit 2, before
  anything starts or embeds (`serve`, `ask`, `index`);
- `cfrag eval` checks every system and sweep value before the first question;
- `--max-tokens` has a range; a 400-digit -N is refused in one line; Ctrl-C is "Interrupted.", exit 130.

The argument cases load no model and run side by side; one `index` run embeds a one-passage
folder with the embedded embedder; the Ctrl-C cases start the command and interrupt it.
"""

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.test_cli_errors import QUESTION, cfrag
from tests.server import free_port

ROOT = Path(__file__).resolve().parents[2]
HOTPOT = ROOT / "tests" / "data" / "hotpotqa_dev_a_30.jsonl"
USER_JSON = '{"my": "settings"}\n'
STORE_HEAD = ('{"type": "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore", '
              '"init_parameters": {}, "documents": []}')

# (id, arguments, exit code, message in the one line) — refused before any model loads or anything is written
ARGUMENT_CASES = [
    ("ask --max-tokens -5", ["ask", QUESTION, "--max-tokens", "-5"], 2, "'--max-tokens': -5 is not in the range"),
    ("compare --max-tokens 0", ["compare", QUESTION, "--max-tokens", "0"], 2, "'--max-tokens': 0 is not in the range"),
    ("ask -N 400 digits", ["ask", QUESTION, "-N", "9" * 400], 2, "Invalid value for -N: must be an integer in [0, 10]"),
    ("ask --store a user's JSON", ["ask", QUESTION, "--store", "user.json"], 2,
     "user.json is not a store cfrag index wrote"),
    ("index --store a user's JSON", ["index", "a.md", "--store", "user.json"], 2,
     "user.json is not a store cfrag index wrote"),
    ("index --store faiss: beside a user's JSON", ["index", "a.md", "--store", "faiss:user"], 2,
     "user.json exists but user.faiss does not"),
    ("index --store qdrant: a user's folder", ["index", "a.md", "--store", "qdrant:mine"], 2,
     "mine holds files that are not a local Qdrant store (metadata.json, notes.txt, report.md)"),
    ("index a file without suffix", ["index", "LICENSE", "--store", "new.json"], 1,
     "LICENSE: no file type suffix (cfrag index reads .txt, .text, .md, .markdown, .pdf, .jsonl)"),
    ("index .env", ["index", ".env", "--store", "new.json"], 1, ".env: no file type suffix"),
    ("index a folder of secrets only", ["index", "secrets", "--store", "new.json"], 2,
     "secrets holds no .txt, .md, .pdf or .jsonl file (skipped 3 hidden, 1 of other types)"),
    ("serve --store a user's JSON", ["serve", "--mock", "--store", "user.json"], 2,
     "user.json is not a store cfrag index wrote"),
    ("serve --store a folder", ["serve", "--mock", "--store", "secrets"], 2,
     "secrets is a folder, not a store file"),
    ("serve --store memory: a folder", ["serve", "--mock", "--store", "memory:secrets"], 2, "is a folder"),
    ("serve --store qdrant: a file", ["serve", "--mock", "--store", "qdrant:user.json"], 2,
     "user.json is not a folder"),
    ("serve --store qdrant: a folder without the collection", ["serve", "--mock", "--store", "qdrant:secrets"], 2,
     "no Qdrant collection 'cfrag' in secrets"),
    ("eval --sweep lambda=2", ["eval", str(HOTPOT), "--out", "runs/a", "--sweep", "lambda=2"], 2,
     "'lambda=2': System 'cf_rag[lambda=2]': 'causal_weight' must be a number in [0, 1], got 2"),
    ("eval --sweep N=99", ["eval", str(HOTPOT), "--out", "runs/b", "--sweep", "N=99"], 2,
     "'n_counterfactuals' must be an integer in [0, 10], got 99"),
    ("eval --systems nope", ["eval", str(HOTPOT), "--out", "runs/c", "--systems", "standard_rag,nope"], 2,
     "Invalid value for --systems: System 'nope': no pipeline 'nope'"),
    ("eval --systems /etc/passwd", ["eval", str(HOTPOT), "--out", "runs/d", "--systems", "/etc/passwd"], 2,
     "/etc/passwd is not a pipeline file (.yml or .yaml)"),
    ("eval --systems a YAML that is no pipeline", ["eval", str(HOTPOT), "--out", "runs/e", "--systems", "list.yml"], 2,
     "list.yml: not a Haystack pipeline file (no 'components' mapping)"),
    ("eval --systems cf_rag[K=0]", ["eval", str(HOTPOT), "--out", "runs/f", "--systems", "cf_rag[K=0]"], 2,
     "'n_clusters' must be an integer in [1, 20], got 0"),
    ("eval --inject-systems nope", ["eval", str(HOTPOT), "--out", "runs/g", "--inject", "2", "--inject-systems",
                                    "nope"], 2, "Invalid value for --inject-systems: System 'nope'"),
    ("eval --out a user's folder", ["eval", str(HOTPOT), "--out", "mine", "--systems", "standard_rag"], 2,
     "Invalid value for --out: mine holds files cfrag eval did not write (metadata.json, notes.txt, report.md)"),
    ("eval --report-only into a user's folder", ["eval", str(HOTPOT), "--out", "mine", "--report-only"], 2,
     "mine holds files cfrag eval did not write"),
    ("eval --out a file", ["eval", str(HOTPOT), "--out", "user.json", "--systems", "standard_rag"], 2,
     "user.json"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("round2")
    (d / "a.md").write_text("# Kettle\n\nThe Zorblax 3000 is a tea kettle.")
    (d / "user.json").write_text(USER_JSON)
    (d / "LICENSE").write_text("OPENAI_API_KEY=sk-in-a-file-without-suffix")
    (d / ".env").write_text("OPENAI_API_KEY=sk-in-dot-env")
    secrets = d / "secrets"
    for name, text in {".env": "KEY=1", ".git/config": "[remote] url = https://token@x", ".ssh/id_rsa": "PRIVATE",
                       "LICENSE": "no suffix"}.items():
        (secrets / name).parent.mkdir(parents=True, exist_ok=True)
        (secrets / name).write_text(text)
    (d / "list.yml").write_text("- not\n- a pipeline\n")
    mine = d / "mine"
    mine.mkdir()
    for name, text in {"metadata.json": '{"mine": true}', "report.md": "# my report", "notes.txt": "notes"}.items():
        (mine / name).write_text(text)
    return d


def _snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def argument_results(workdir):
    before = _snapshot(workdir)
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = pool.map(lambda case: cfrag(*case[1], cwd=workdir), ARGUMENT_CASES)
        results = {case[0]: run for case, run in zip(ARGUMENT_CASES, runs, strict=True)}
    return results, before, _snapshot(workdir)


@pytest.mark.parametrize(("name", "args", "code", "message"), ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_refused_in_one_line_before_anything_loads_or_is_written(argument_results, name, args, code, message):
    results, _, _ = argument_results
    exit_code, output = results[name]
    assert exit_code == code, output
    assert output.strip().splitlines() == [output.strip()] and output.startswith("Error: "), output
    assert message in output, output


def test_the_refused_commands_changed_no_file(argument_results, workdir):
    _, before, after = argument_results
    assert after == before  # user.json, mine/metadata.json, mine/report.md … as they were; no store, no runs/
    assert not (workdir / "runs").exists() and not (workdir / "new.json").exists()


def test_index_a_folder_reads_only_the_documented_types_and_counts_what_it_skipped(tmp_path):
    project = tmp_path / "project"
    files = {".env": "OPENAI_API_KEY=sk-live-0123456789", ".git/config": "[remote] url = https://ghp_token@x",
             ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----", "LICENSE": "MIT, and a password: hunter2",
             "notes.md": "# Garden\n\nThe community garden on Elm Street grows basil."}
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    (tmp_path / "outside.txt").write_text("a file out of the folder")
    (project / "link.txt").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "store.json.tmp").write_text("the user's own file")  # was the store's fixed temporary name
    code, output = cfrag("index", "project", "--store", "store.json", cwd=tmp_path)
    assert code == 0, output
    summary = [line for line in output.splitlines() if "files →" in line]
    assert summary and summary[0].startswith("1 files → 1 passages"), output
    assert summary[0].endswith("; skipped 3 hidden, 1 of other types, 1 links leading out of the folder"), output
    store = json.loads((tmp_path / "store.json").read_text())
    assert [d["content"] for d in store["documents"]] == ["Garden\n\nThe community garden on Elm Street grows basil."]
    assert (tmp_path / "store.json.tmp").read_text() == "the user's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt", "project", "store.json", "store.json.tmp"]
    # the store it wrote is extended; a user's JSON beside it is still refused before any embedding
    (tmp_path / "user.json").write_text(USER_JSON)
    code, output = cfrag("index", "project/notes.md", "--store", "user.json", cwd=tmp_path)
    assert code == 2 and "user.json is not a store cfrag index wrote" in output and "Traceback" not in output
    assert (tmp_path / "user.json").read_text() == USER_JSON


def test_eval_writes_into_a_folder_it_made_or_its_own_run_folder(tmp_path):
    records = "".join(json.dumps({"key": f"pooled|x|{q}", "condition": "pooled", "system": "standard_rag",
                                  "qid": q, "em": 1.0, "f1": 1.0, "lenient": 1.0, "support_recall": None,
                                  "seconds": 1.0, "stages": {}, "llm": {}, "error": None, "params": {},
                                  "pipeline": "standard_rag", "inject": 0, "variant": None}) + "\n" for q in "ab")
    old_run = tmp_path / "old-run"  # a run folder from before the marker: its records say whose it is
    old_run.mkdir()
    (old_run / "records.jsonl").write_text(records)
    code, output = cfrag("eval", str(HOTPOT), "--out", "old-run", "--report-only", "--no-plots", cwd=tmp_path)
    assert code == 0, output
    assert json.loads((old_run / ".cfrag-eval.json").read_text())["written_by"] == "cfrag eval"
    (old_run / "report.md").write_text("edited")  # a folder with the marker is cfrag eval's: rebuilt
    code, output = cfrag("eval", str(HOTPOT), "--out", "old-run", "--report-only", "--no-plots", cwd=tmp_path)
    assert code == 0 and "standard_rag" in (old_run / "report.md").read_text(), output
    serve_marker = tmp_path / "deployed"  # another command's marker does not make it cfrag eval's
    serve_marker.mkdir()
    (serve_marker / ".cfrag-eval.json").write_text('{"written_by": "cfrag serve"}')
    code, output = cfrag("eval", str(HOTPOT), "--out", "deployed", "--report-only", cwd=tmp_path)
    assert code == 2 and "is not a marker cfrag eval wrote" in output, output


def _interrupt(args, cwd, *, delay=None, wait_for=None, timeout=120):
    """Start `cfrag ARGS` in its own process group, send the group SIGINT (a terminal's Ctrl-C); (code, output)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CFRAG_API_KEY", "CFRAG_DEBUG")}
    env.update({"HAYSTACK_TELEMETRY_ENABLED": "False", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    proc = subprocess.Popen([sys.executable, "-m", "haystack_cfrag.cli", *args], cwd=cwd, env=env, text=True,  # noqa: S603
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    try:
        if wait_for:
            for line in proc.stdout:
                lines.append(line)
                if wait_for in line:
                    break
        else:
            time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, "".join(lines) + rest


@pytest.mark.parametrize("when", [{"delay": 0.4}, {"delay": 4.0}, {"wait_for": "Loading weights: 100%"}],
                         ids=["while importing", "while loading the models", "as llama.cpp loads"])
def test_ctrl_c_in_ask_is_one_line_and_exit_130(tmp_path, when):
    # "as llama.cpp loads": right after the embedder's weights, where a Ctrl-C was lost 1 time in 3 (the
    # answer came) before the load held it back; under `python -m` the exit was sometimes death by SIGINT (-2)
    code, output = _interrupt(["ask", QUESTION], tmp_path, **when)
    if "wait_for" in when and when["wait_for"] not in output:  # transformers' own progress line times it
        pytest.skip(f"transformers printed no {when['wait_for']!r} line to time the interrupt by")
    assert code == 130, output
    assert output.strip().splitlines()[-1] == "Interrupted." and "Traceback" not in output, output


def test_ctrl_c_in_serve_stops_the_server_without_a_traceback(tmp_path):
    code, output = _interrupt(["serve", "--mock", "--port", str(free_port())], tmp_path, wait_for="[serve] deploy dir")
    assert code == 130, output
    assert output.strip().splitlines()[-1] == "Interrupted." and "Traceback" not in output, output
