"""Ctrl-C in the `cfrag` command: `interrupts.held` and the CPython flag under `python -m`."""

import ctypes
import os
import signal
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from haystack_cfrag.common.interrupts import held, warm_up
from tests.fakes import HashingDocumentEmbedder, ReaderInterruptedWhileLoading

pytestmark = pytest.mark.usefixtures("sigint_as_in_a_terminal")


def test_a_ctrl_c_inside_the_block_lets_it_finish_then_raises():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with held():
            signal.raise_signal(signal.SIGINT)
            steps.append("the block went on")
    assert steps == ["the block went on"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_in_a_c_callback_is_swallowed_unless_held(monkeypatch):
    """What llama.cpp's log callback does while a model loads: the interrupt raised in it is unraisable."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type))
    callback = ctypes.CFUNCTYPE(None)(lambda: signal.raise_signal(signal.SIGINT))
    callback()  # not held: no KeyboardInterrupt here, the command would go on
    assert unraisable == [KeyboardInterrupt]
    with pytest.raises(KeyboardInterrupt), held():
        callback()
    assert unraisable == [KeyboardInterrupt]  # held: recorded, then raised after the block


def test_a_block_without_ctrl_c_raises_nothing_and_an_error_in_it_propagates():
    with held():
        pass
    with pytest.raises(ValueError, match="bad model"), held():
        raise ValueError("bad model")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_someone_elses_sigint_handler_is_left_alone():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: seen.append(signum))
    try:
        with held():
            signal.raise_signal(signal.SIGINT)
        assert seen == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_it_is_a_no_op():
    errors = []

    def work():
        try:
            with held():
                pass
        except Exception as exc:  # noqa: BLE001  (the test reports any)
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert errors == []


MODULE = """
import os, signal, sys
from haystack_cfrag.common.interrupts import clear_stale_interrupt_flag
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even in a background job
try:  # an interrupt passes through code run by exec of a string (as in a dataclass made in an import)
    exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(1000): pass")
except KeyboardInterrupt:
    print("caught")
try:
    sys.exit(130)
finally:
    if sys.argv[1:] == ["clear"]:
        clear_stale_interrupt_flag()
"""


@pytest.mark.parametrize("clear", [
    pytest.param(False, id="as CPython leaves it", marks=pytest.mark.skipif(
        sys.version_info[:2] != (3, 11), reason="seen on CPython 3.11; other versions unmeasured")),
    pytest.param(True, id="flag cleared"),
])
def test_python_m_exits_130_after_a_caught_interrupt_once_the_flag_is_cleared(tmp_path, clear):
    (tmp_path / "interrupted_exit.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    command = [sys.executable, "-m", "interrupted_exit", *(["clear"] if clear else [])]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,  # noqa: S603
                          timeout=60, check=False)
    assert done.stdout.strip() == "caught", done.stderr
    assert done.returncode == (130 if clear else -signal.SIGINT)  # uncleared: killed by SIGINT, not exit 130


def test_index_graph_stops_once_the_reader_is_loaded_and_before_any_extraction(tmp_path, monkeypatch):
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.cli import main

    reader = ReaderInterruptedWhileLoading(candidates=["x"])
    monkeypatch.setattr(sys, "unraisablehook", lambda _unraisable: None)  # what ctypes reports, unheld
    embedder = HashingDocumentEmbedder()
    embedder.warm_up = lambda: None  # the command warms its embedder; the fake needs none
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: embedder)
    monkeypatch.setattr(factories, "chat_generator", lambda *_a, **_k: reader)
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "notes.txt").write_text("Rain causes floods in the valley.")  # .txt: no optional converter
    store = str(tmp_path / "store.json")
    result = CliRunner().invoke(main, ["index", str(tmp_path / "notes.txt"), "--store", store, "--graph",
                                       "--extractor", "llm"])  # the extractor that loads a reader
    assert result.exit_code == 130, result.output
    assert result.output.strip().splitlines()[-1] == "Interrupted."
    assert reader.loaded and reader.calls == 0  # loaded, then stopped before the first extraction


def test_warm_up_loads_every_component_that_can_then_raises_a_held_ctrl_c(monkeypatch):
    monkeypatch.setattr(sys, "unraisablehook", lambda _unraisable: None)  # what ctypes reports, unheld
    reader, plain = ReaderInterruptedWhileLoading(candidates=["x"]), object()  # no warm_up: skipped
    with pytest.raises(KeyboardInterrupt):
        warm_up(plain, reader)
    assert reader.loaded
