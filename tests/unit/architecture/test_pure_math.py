"""Pure math imports no Haystack: every family's `math/` modules, the support score's math and the text helpers.

Each module is imported in a fresh interpreter whose import system refuses `haystack` (and its
integrations): a module that needs Haystack fails to import there. The list is a glob, so a new
family's `math/` is covered the day it lands.
"""

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "haystack_cfrag"
PURE = sorted({*PACKAGE.glob("*/math/*.py"), *PACKAGE.glob("*/math.py"), PACKAGE / "common" / "text.py",
               PACKAGE / "common" / "vectors.py", PACKAGE / "common" / "qualifiers.py"})

BLOCK = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "haystack" or name.startswith(("haystack.", "haystack_integrations")):
            raise ImportError(f"pure math imported {name}")
sys.meta_path.insert(0, Refuse())
import importlib
importlib.import_module(sys.argv[1])
"""


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_glob_finds_every_family_math():
    found = {_module(p).split(".")[1] for p in PURE}
    assert {"cfrag", "cer", "support", "common"} <= found


@pytest.mark.parametrize("path", PURE, ids=lambda p: _module(p))
def test_pure_module_imports_without_haystack(path):
    done = subprocess.run([sys.executable, "-c", BLOCK, _module(path)], capture_output=True, text=True,
                          cwd=PACKAGE.parent, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_block_refuses_haystack():
    # the check can fail: a module that imports Haystack is refused
    done = subprocess.run([sys.executable, "-c", BLOCK, "haystack_cfrag.common.plumbing"], capture_output=True,
                          text=True, cwd=PACKAGE.parent, timeout=120, check=False)
    assert done.returncode != 0 and "pure math imported haystack" in done.stderr
