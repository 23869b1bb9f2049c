"""The real `cfrag` command (a subprocess) on bad arguments and bad files: one line naming the input, exit ≠ 0.

Argument errors are refused before any model loads (exit 2, the whole output is one line);
bad files and empty results fail with exit 1 and one `Error:` line naming file and line; only
`cfrag --debug` prints a traceback. The argument cases run side by side in one fixture (each is
a Python start-up, no model). The last tests load the embedder and the demo store, and point
the LLM at a closed port: every LLM call fails at once, no model is loaded.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.server import free_port

QUESTION = "Who is the lead actor in The Dark Knight?"


def cfrag(*args, cwd, extra_env=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PG_CONN_STR", "CFRAG_API_KEY", "CFRAG_DEBUG")}
    env.update({"HAYSTACK_TELEMETRY_ENABLED": "False", "HF_HUB_OFFLINE": "1", "OPENAI_MAX_RETRIES": "0",
                "OPENAI_TIMEOUT": "10", **(extra_env or {})})
    done = subprocess.run([sys.executable, "-m", "haystack_cfrag.cli", *args], cwd=cwd, env=env, timeout=timeout,
                          capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


# (id, arguments, exit code, message) — refused before any model loads
ARGUMENT_CASES = [
    ("ask -N 99", ["ask", QUESTION, "-N", "99"], "Invalid value for -N: must be an integer in [0, 10], got 99"),
    ("ask -K 0", ["ask", QUESTION, "-K", "0"], "Invalid value for -K: must be an integer in [1, 20], got 0"),
    ("ask -M 21", ["ask", QUESTION, "-M", "21"], "Invalid value for -M: must be an integer in [1, 20], got 21"),
    ("ask --lambda 2", ["ask", QUESTION, "--lambda", "2"], "Invalid value for --lambda: must be a number in [0, 1]"),
    ("ask --lambda nan", ["ask", QUESTION, "--lambda", "nan"], "got nan"),
    ("compare --seed -1", ["compare", QUESTION, "--seed", "-1"],
     "Invalid value for --seed: must be an integer in [0, 4294967295]"),
    ("ask --store missing", ["ask", QUESTION, "--store", "missing.json"], "no store at missing.json: create it with"),
    ("ask --store pgvector:mysql", ["ask", QUESTION, "--store", "pgvector:mysql://x"],
     "use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]"),
    ("ask --store pgvector: without URL", ["ask", QUESTION, "--store", "pgvector:"], "PG_CONN_STR is not set"),
    ("ask --store pgvector bad table", ["ask", QUESTION, "--store", "pgvector:postgresql://u@h/db#drop table"],
     "must be a plain SQL identifier"),
    ("ask --store mongo", ["ask", QUESTION, "--store", "mongo://x"], "unknown store kind 'mongo'"),
    ("ask --llm missing gguf", ["ask", QUESTION, "--llm", "missing.gguf"], "no such model file: missing.gguf"),
    ("ask --llm openai: without URL", ["ask", QUESTION, "--llm", "openai:"], "'openai:' names no server URL"),
    ("ask --llm unknown embedded", ["ask", QUESTION, "--llm", "embedded:nope"], "unknown embedded model"),
    ("index --words 0", ["index", "a.txt", "--store", "s.json", "--words", "0"], "Invalid value for '--words'"),
    ("index --overlap = --words", ["index", "a.txt", "--store", "s.json", "--words", "50", "--overlap", "50"],
     "Invalid value for --overlap: must be smaller than --words (50), got 50"),
    ("index --store pgvector: without URL", ["index", "a.txt", "--store", "pgvector:"], "PG_CONN_STR is not set"),
    ("index --store mongo", ["index", "a.txt", "--store", "mongo://x"], "unknown store kind 'mongo'"),
    ("index empty folder", ["index", "emptydir", "--store", "s.json"], "emptydir holds no .txt, .md, .pdf or .jsonl"),
    ("serve --deploy-dir a file", ["serve", "--mock", "--deploy-dir", "a.txt"], "a.txt is not a folder"),
    ("serve --deploy-dir a user folder", ["serve", "--mock", "--deploy-dir", "project"],
     "holds files cfrag serve did not write (notes.md)"),
    ("serve --allow-deploy without token", ["serve", "--mock", "--allow-deploy"], "--allow-deploy needs CFRAG_API_KEY"),
    ("serve --cors-origin *", ["serve", "--mock", "--cors-origin", "*"], "'*' is not an origin"),
    ("serve --cors-origin with a path", ["serve", "--mock", "--cors-origin", "http://ui.example/app"], "not an origin"),
    ("serve --store missing", ["serve", "--mock", "--store", "missing.json"],
     "no store at missing.json: create it with"),
    ("serve --store mongo", ["serve", "--mock", "--store", "mongo://x"], "unknown store kind 'mongo'"),
    ("serve --store faiss missing", ["serve", "--mock", "--store", "faiss:missing"], "no store at missing.faiss"),
    ("serve --store pgvector: without URL", ["serve", "--mock", "--store", "pgvector:"], "PG_CONN_STR is not set"),
    ("serve --llm openai: without URL", ["serve", "--llm", "openai:"], "'openai:' names no server URL"),
    ("eval --llm missing gguf", ["eval", "a.txt", "--llm", "missing.gguf"], "no such model file: missing.gguf"),
]

# (id, arguments, message) — bad files and empty results: exit 1 after reading, before embedding
FILE_CASES = [
    ("corrupt JSONL line", ["index", "corrupt.jsonl"], "corrupt.jsonl:2: not valid JSON"),
    ("JSONL line without content", ["index", "nocontent.jsonl"], "nocontent.jsonl:1: a line needs 'content'"),
    ("JSONL line not an object", ["index", "list.jsonl"], "list.jsonl:1: a line must be a JSON object"),
    ("non-UTF-8 text", ["index", "latin1.txt"], "latin1.txt:2: not UTF-8 text; convert the file to UTF-8"),
    ("non-UTF-8 JSONL", ["index", "latin1.jsonl"], "latin1.jsonl:1: not UTF-8 text"),
    ("empty file", ["index", "empty.txt"], "no passage to index: 1 file(s) gave no text; the store is unchanged"),
    ("random-bytes pdf", ["index", "random.pdf"], "no passage to index"),
    ("unsupported type", ["index", "image.png"], "image.png: unsupported file type '.png'"),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "a.txt").write_text("The Zorblax 3000 is a tea kettle.")
    (d / "emptydir").mkdir()
    (d / "project").mkdir()
    (d / "project" / "notes.md").write_text("my notes")
    (d / "corrupt.jsonl").write_text('{"content": "fine"}\n{"content": broken\n')
    (d / "nocontent.jsonl").write_text('{"title": "no text"}\n')
    (d / "list.jsonl").write_text('["content", "x"]\n')
    (d / "latin1.txt").write_bytes("first line\ncaf\xe9 au lait\n".encode("latin-1"))
    (d / "latin1.jsonl").write_bytes('{"content": "caf\xe9"}\n'.encode("latin-1"))
    (d / "empty.txt").write_text("")
    (d / "random.pdf").write_bytes(os.urandom(4096))
    (d / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    return d


@pytest.fixture(scope="module")
def argument_results(workdir):
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = pool.map(lambda case: cfrag(*case[1], cwd=workdir), ARGUMENT_CASES)
        return {case[0]: run for case, run in zip(ARGUMENT_CASES, runs, strict=True)}


@pytest.mark.parametrize(("name", "args", "message"), ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_bad_arguments_are_one_line_before_any_model_loads(argument_results, workdir, name, args, message):
    code, output = argument_results[name]
    assert code == 2, output
    assert output.strip().splitlines() == [output.strip()] and output.startswith("Error: "), output
    assert message in output
    assert (workdir / "project" / "notes.md").read_text() == "my notes"  # a refused deploy dir is left alone


@pytest.mark.parametrize(("name", "args", "message"), FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_bad_files_and_empty_results_fail_naming_the_file(workdir, name, args, message):
    code, output = cfrag(*args, "--store", "out.json", cwd=workdir)
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert code == 1 and len(errors) == 1 and message in errors[0], output
    assert "Traceback" not in output and not (workdir / "out.json").exists()


def test_an_answer_when_every_llm_call_failed_says_so_and_exits_1(tmp_path):
    llm = f"openai:http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    code, output = cfrag("ask", QUESTION, "--pipeline", "cf_rag_paper", "--llm", llm, cwd=tmp_path)
    assert code == 1 and "cf_rag_paper: no answer: every LLM call failed" in output, output
    assert "Traceback" not in output


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(tmp_path):
    llm = f"openai:http://127.0.0.1:{free_port()}/v1"
    code, output = cfrag("ask", QUESTION, "--pipeline", "standard_rag", "--llm", llm, cwd=tmp_path)
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert code == 1 and len(errors) == 1 and "component 'generator' failed:" in errors[0], output
    assert "--debug" in errors[0] and "Traceback" not in output
    code, output = cfrag("--debug", "ask", QUESTION, "--pipeline", "standard_rag", "--llm", llm, cwd=tmp_path)
    assert code == 1 and "Traceback (most recent call last)" in output


DEAD_PG = "pgvector:postgresql://cfrag:s3cr3t-P4ss@127.0.0.1:{port}/rag"  # nothing listens: refused at once


def test_serve_on_a_store_that_fails_to_open_prints_asks_one_line_and_exits_as_ask(tmp_path):
    """Issue 62, D4: the server process left the failure to Hayhooks (73-82 lines, three tracebacks, the
    password three times, and a server still running). Now: the line `cfrag ask` prints, and its exit code."""
    store = DEAD_PG.format(port=free_port())
    llm = f"openai:http://127.0.0.1:{free_port()}/v1"
    ask_code, ask_output = cfrag("ask", QUESTION, "--store", store, "--llm", llm, cwd=tmp_path)
    code, output = cfrag("serve", "--mock", "--store", store, "--port", str(free_port()), cwd=tmp_path, timeout=180)
    lines = [line for line in output.splitlines() if not line.startswith("[serve] ")]
    assert ask_code == code == 1, output
    assert lines == ask_output.strip().splitlines()[-1:] and lines[0].startswith("Error: "), (output, ask_output)
    assert "Traceback" not in output and "s3cr3t" not in output + ask_output
