"""Issue 62 (D14): `stores.lock.store_lock` lets one process at a time write a store, bounded, and leaves no lock file.

Four processes each add to a counter file under the lock, reading it, sleeping, writing it back: without
the lock, they read the same value and increments are lost.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from haystack_cfrag.stores.lock import StoreBusy, lock_path, store_lock
from haystack_cfrag.stores.specs import parse_store_spec

ROOT = Path(__file__).resolve().parents[3]
WRITER = """
import sys, time
from pathlib import Path
from haystack_cfrag.stores.lock import store_lock

spec, counter = sys.argv[1], Path(sys.argv[2])
for _ in range(3):
    with store_lock(spec, wait=60):
        n = int(counter.read_text())
        time.sleep(0.05)
        counter.write_text(str(n + 1))
"""


def test_processes_take_turns_and_no_increment_is_lost(tmp_path):
    spec = f"faiss:{tmp_path / 'store'}"
    counter = tmp_path / "counter"
    counter.write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, spec, str(counter)], cwd=ROOT)  # noqa: S603
             for _ in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 4
    assert counter.read_text() == "12"
    assert not lock_path(parse_store_spec(spec)).exists()


def test_a_held_store_refuses_at_once_with_wait_zero_and_reenters_in_the_holder(tmp_path):
    spec = f"faiss:{tmp_path / 'store'}"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom haystack_cfrag.stores.lock import "  # noqa: S603
                               "store_lock\nwith store_lock(sys.argv[1]):\n    print('held', flush=True)\n"
                               "    time.sleep(60)\n", spec], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match=rf"is being written by another cfrag index \(pid {holder.pid}\)"):
            with store_lock(spec, wait=0):
                pass
    finally:
        holder.kill()
        holder.wait()
    with store_lock(spec, wait=5), store_lock(spec, wait=0):  # the holder gone (killed): free, and re-entrant
        assert lock_path(parse_store_spec(spec)).exists()
    assert not lock_path(parse_store_spec(spec)).exists()
