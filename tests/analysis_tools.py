"""Load a script of `benchmarks/analysis/` as a module (they import `run_folder` as a sibling)."""

import importlib.util
import sys
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[1] / "benchmarks" / "analysis"


def load_tool(name: str):
    """The module of `benchmarks/analysis/<name>.py`."""
    if str(ANALYSIS) not in sys.path:
        sys.path.insert(0, str(ANALYSIS))
    spec = importlib.util.spec_from_file_location(name, ANALYSIS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
