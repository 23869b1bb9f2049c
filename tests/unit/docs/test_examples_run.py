"""Every `>>>` example in the package and every component's usage example run as written.

The modules are found by walking `haystack_cfrag` (no list kept by hand): each module with a `>>>`
example is one test, run as `doctest` runs it (the module's globals, `ELLIPSIS`, from the checkout's
root). Each component class with a `### Usage example` in its docstring is one test: its first
```python block runs in a fresh namespace and must print its result; a component exported by a
`components` package must have one. An example that needs an optional dependency this environment
lacks (a module not installed, or a name an older library does not have, such as Haystack 3's
`MockChatGenerator` on haystack-ai 2.x) is skipped with that reason; any other failure fails.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
import re
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from haystack.core.component.component import ComponentMeta

import haystack_cfrag

ROOT = Path(__file__).resolve().parents[3]
USAGE = re.compile(r"### Usage example\s*```python\n(.*?)```", re.DOTALL)
_IMPORTED: dict[str, ModuleType | BaseException] = {}


def module_names() -> list[str]:
    """Every module of the package (a `__main__` runs the CLI when imported: not one)."""
    found = pkgutil.walk_packages(haystack_cfrag.__path__, "haystack_cfrag.", onerror=lambda name: None)
    return sorted(info.name for info in found if not info.name.endswith(".__main__"))


def imported(name: str) -> ModuleType | BaseException:
    """The module, or why it did not import."""
    if name not in _IMPORTED:
        try:
            _IMPORTED[name] = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001  (reported by the test that needs the module)
            _IMPORTED[name] = exc
    return _IMPORTED[name]


def missing(exc: BaseException | None) -> str | None:
    """What is not installed when `exc` (or an exception it came from) is an ImportError of a
    third-party module or name; None for any other error, the package's own names included."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ModuleNotFoundError):
            if exc.name and not exc.name.startswith("haystack_cfrag"):
                return exc.name
        elif isinstance(exc, ImportError):
            name = re.match(r"cannot import name '(\w+)' from '([\w.]+)'", str(exc))
            if name and not name.group(2).startswith("haystack_cfrag"):
                return f"{name.group(2)}.{name.group(1)}"
        exc = exc.__cause__ or exc.__context__
    return None


class _Runner(doctest.DocTestRunner):
    """A DocTestRunner that keeps the exceptions the examples raised."""

    def __init__(self) -> None:
        super().__init__(optionflags=doctest.ELLIPSIS)
        self.raised: list[BaseException] = []

    def report_unexpected_exception(self, out, test, example, exc_info):  # noqa: ANN001
        self.raised.append(exc_info[1])
        super().report_unexpected_exception(out, test, example, exc_info)


def doctests(name: str) -> list[doctest.DocTest]:
    module = imported(name)
    if isinstance(module, BaseException):
        return []
    return [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]


def components() -> list[type]:
    """Every component class the package defines under a public name."""
    found = {}
    for name in module_names():
        module = imported(name)
        if isinstance(module, BaseException):
            continue
        for attr, cls in vars(module).items():
            if isinstance(cls, ComponentMeta) and cls.__module__ == name and not attr.startswith("_"):
                found[f"{name}.{attr}"] = cls
    return [found[key] for key in sorted(found)]


def exported_components() -> list[type]:
    """The components a user imports: those the package, a family package (one with a `family` module)
    or a `components` package exports."""
    names = set(module_names())
    homes = ["haystack_cfrag", *(n for n in names if n.endswith(".components") or f"{n}.family" in names)]
    out = []
    for name in homes:
        module = imported(name)
        for attr in getattr(module, "__all__", ()):
            cls = getattr(module, attr, None)  # a name the face lists but lost is another test's to find
            if isinstance(cls, ComponentMeta) and cls not in out:
                out.append(cls)
    return out


MODULES = module_names()
WITH_EXAMPLES = [name for name in MODULES if doctests(name) or isinstance(imported(name), BaseException)]


def test_only_a_missing_third_party_module_or_name_is_a_reason_to_skip():
    lazy = ImportError("Failed to import 'faiss'.")
    lazy.__cause__ = ModuleNotFoundError("No module named 'faiss'", name="faiss")
    assert missing(lazy) == "faiss"
    old = ImportError("cannot import name 'MockChatGenerator' from 'haystack.components.generators.chat' (x)")
    assert missing(old) == "haystack.components.generators.chat.MockChatGenerator"
    assert missing(ModuleNotFoundError("No module named 'haystack_cfrag.x'", name="haystack_cfrag.x")) is None
    assert missing(ImportError("cannot import name 'X' from 'haystack_cfrag.common'")) is None
    assert missing(ValueError("bad")) is None


def test_the_walk_finds_the_package():
    assert len(MODULES) > 100 and "haystack_cfrag.cdf_rag.math.merge" in WITH_EXAMPLES
    assert "haystack_cfrag.cdf_rag.components.dual_path_retriever" in MODULES


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_module_examples_run(name, monkeypatch):
    module = imported(name)
    if isinstance(module, BaseException):
        if what := missing(module):
            pytest.skip(f"{name} needs {what}, which is not installed")
        raise module
    monkeypatch.chdir(ROOT)  # an example may read the checkout's files (tests/data, pipelines/)
    runner, report = _Runner(), io.StringIO()
    for test in doctests(name):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    if result.failed:
        needs = sorted({what for exc in runner.raised if (what := missing(exc))})
        if needs:
            pytest.skip(f"{name}'s examples need {', '.join(needs)}, which is not installed")
    assert result.attempted > 0 and result.failed == 0, report.getvalue()


def test_every_exported_component_has_a_usage_example():
    exported = exported_components()
    assert len(exported) >= 10
    assert [c.__name__ for c in exported if not USAGE.search(c.__doc__ or "")] == []


@pytest.mark.parametrize("cls", [c for c in components() if USAGE.search(c.__doc__ or "")],
                         ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_usage_example_runs(cls, capsys, monkeypatch):
    block = USAGE.search(cls.__doc__)
    monkeypatch.chdir(ROOT)
    code = textwrap.dedent(block.group(1))
    try:
        exec(compile(code, f"<{cls.__name__} usage example>", "exec"), {"__name__": "example"})  # noqa: S102
    except Exception as exc:  # noqa: BLE001  (only a missing optional dependency is a reason to skip)
        if what := missing(exc):
            pytest.skip(f"{cls.__name__}'s usage example needs {what}, which is not installed")
        raise
    assert capsys.readouterr().out.strip(), f"{cls.__name__}'s usage example should print its result"
