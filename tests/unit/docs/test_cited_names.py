"""The docs name only what exists: every package name and file path cited in README.md and docs/*.md.

Read: README.md and the top-level docs/*.md. Not read: the archive folders' own reports
(docs/results/<run>/) and docs/results/HISTORY.md — historical records, which name what existed
when they were written.

The forms read, and only these (prose is never guessed at):

1. `haystack_cfrag.a.b` anywhere (prose, backticks, code blocks): imports, or resolves by attribute;
   a name continued by a placeholder (`haystack_cfrag.components.<module>.<Class>`, the old layout
   the loader rewrites) is a pattern, not a name, and is skipped. A two-part `haystack_cfrag.x`
   that the package writes as a string literal (a tracing span or tag name) exists too.
2. A backticked span that is a dotted name and nothing else (a call's `(...)` may follow), whose
   first part is a top-level module of the package (`models.chat_generator`, `registry.resolve`,
   `common.interrupts.warm_up`) or one it had (`FORMER_MODULES`, so that an old name cannot come
   back): resolved under `haystack_cfrag.`. A span ending in a file suffix (`family.py`) is a file.
   Other dotted spans (`Runtime.ask`, `graph.build_graph` of the paper's code, `math.isfinite`)
   are not read: their first part is no module of the package.
3. In ```python blocks: `from haystack_cfrag[.m] import a, b` (each name exists) and `x.attr`
   where `x` was imported from the package in that block (`models.chat_generator(...)`).
4. Paths from the checkout's root under `ROOTS` (`haystack_cfrag/...py`, `benchmarks/...py`,
   `pipelines/*.yml`, `tests/...py`, `examples/...`), anywhere: exist (a glob matches); a test
   path followed by `::name` names a function or class defined in that file.
5. A path whose first folder is a subpackage of haystack_cfrag (`cfrag/family.py`,
   `serving/requests.py`) ending in a file suffix: exists under haystack_cfrag/ (or the root).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import haystack_cfrag

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "haystack_cfrag"
FORMER_MODULES = ("core",)
"""Top-level modules the package had (core/ became cfrag/math/ and common/): a citation under them is read."""
ROOTS = ("haystack_cfrag", "benchmarks", "pipelines", "tests", "examples")
FILE_SUFFIXES = {"py", "yml", "yaml", "json", "jsonl", "md", "txt", "toml", "sh", "cfg", "gz", "xz", "tar"}

TOP = {m.name for m in pkgutil.iter_modules(haystack_cfrag.__path__)}
SUBPACKAGES = {m.name for m in pkgutil.iter_modules(haystack_cfrag.__path__) if m.ispkg}

NAME = r"[A-Za-z_]\w*"
PREFIXED = re.compile(rf"(?<![\w.])haystack_cfrag(?:\.{NAME})+\b(?!\.[<{{\[*])")
SPAN = re.compile(r"`([^`\n]+)`")
DOTTED_SPAN = re.compile(rf"({NAME}(?:\.{NAME})+)(?:\(.*\))?")
ROOTED = re.compile(rf"(?<![\w/.-])((?:{'|'.join(ROOTS)})/[\w/.*-]*[\w*/])(?:::({NAME}))?")
RELATIVE = re.compile(r"(?<![\w/.-])((\w+)/[\w/.*-]*\.(\w+))\b")
FENCE = re.compile(r"^\s*```(\w*)")


@dataclass(frozen=True)
class Citation:
    doc: str
    line: int
    name: str
    form: str

    def __str__(self):
        return f"{self.doc}:{self.line}: {self.name} ({self.form})"


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def citations(text: str, doc: str) -> list[Citation]:
    """Every citation of the five forms in one Markdown text."""
    found: list[Citation] = []
    lines = text.splitlines()
    fence, block, block_start = None, [], 0
    for number, line in enumerate(lines, 1):
        opened = FENCE.match(line)
        if opened and fence is None:
            fence, block, block_start = opened.group(1) or "text", [], number + 1
            continue
        if opened and fence is not None:
            if fence == "python":
                found += python_citations("\n".join(block), doc, block_start)
            fence = None
            continue
        if fence is not None:
            block.append(line)
        found += [Citation(doc, number, m.group(0), "name") for m in PREFIXED.finditer(line)]
        if fence is None:
            for span in SPAN.finditer(line):
                dotted = DOTTED_SPAN.fullmatch(span.group(1))
                if dotted is None:
                    continue
                name = dotted.group(1)
                first, last = name.split(".")[0], name.rsplit(".", 1)[1]
                if (first in TOP or first in FORMER_MODULES) and last not in FILE_SUFFIXES:
                    found.append(Citation(doc, number, name, "module.name"))
        rooted_spans = set()
        for m in ROOTED.finditer(line):
            rooted_spans.add(m.start())
            path = m.group(1) + (f"::{m.group(2)}" if m.group(2) else "")
            found.append(Citation(doc, number, path, "path"))
        for m in RELATIVE.finditer(line):
            if m.group(2) in SUBPACKAGES and m.group(2) not in ROOTS and m.group(3) in FILE_SUFFIXES:
                found.append(Citation(doc, number, m.group(1), "package path"))
    return found


def python_citations(source: str, doc: str, first_line: int) -> list[Citation]:
    """Form 3: the package's names a Python code block imports and the attributes it reads of them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "haystack_cfrag":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.append(Citation(doc, first_line + node.lineno - 1, full, "import"))
                bound[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            name = f"{bound[node.value.id]}.{node.attr}"
            found.append(Citation(doc, first_line + node.lineno - 1, name, "code"))
    return found


def string_literals() -> set[str]:
    literals = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.add(node.value)
    return literals


def resolves(dotted: str) -> bool:
    """`haystack_cfrag.a.b.c`: the longest importable module prefix, then attributes. Where a module
    cannot be imported here for want of an optional dependency (the 2.x test venv has no hayhooks),
    its source is read instead: the first attribute must be defined at its top level."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if not module_file(module):
            continue
        try:
            obj = importlib.import_module(module)
        except ImportError as error:
            if error.name and (module == error.name or module.startswith(error.name + ".")):
                return False
            return cut == len(parts) or parts[cut] in top_level_names(module_file(module))
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def exists(citation: Citation, literals: set[str]) -> bool:
    name = citation.name
    if citation.form in ("name", "import", "code"):
        return resolves(name) or (name.count(".") == 1 and name in literals)
    if citation.form == "module.name":
        return resolves(f"haystack_cfrag.{name}")
    if citation.form == "package path":
        return any(PACKAGE.glob(name)) or any(ROOT.glob(name))
    path, _, test = name.partition("::")
    matches = list(ROOT.glob(path.rstrip("/")))
    if not matches:
        return False
    if test:
        return any(test in top_level_names(m) for m in matches if m.suffix == ".py")
    return True


def missing_in(paths: list[Path]) -> tuple[list[Citation], list[Citation]]:
    literals = string_literals()
    cited = [c for path in paths
             for c in citations(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    return cited, [c for c in cited if not exists(c, literals)]


def test_every_cited_name_and_path_exists():
    cited, missing = missing_in(docs())
    assert len(cited) > 300, f"the matcher read only {len(cited)} citations: has its reading broken?"
    assert not missing, "the docs cite names and paths that do not exist:\n" + "\n".join(map(str, missing))


SAMPLE = """\
Build it with `models.chat_generator("openai:…")` or `haystack_cfrag.models.chat_generator(spec)`;
`registry.resolve(name)` gives the entry, `core.text.clean_query` cleans, the tags are
`haystack_cfrag.llm_call` and `haystack_cfrag.stage`. Old YAML: `haystack_cfrag.components.<module>.<Class>`.
Prose the matcher leaves alone: `Runtime.ask`, `graph.build_graph` (the paper's code), `math.isfinite`,
`family.py`, e.g. a `dict.get`, i.e. anything.
See tests/unit/docs/test_cited_names.py::test_matcher_reads_only_its_forms and
tests/unit/docs/test_cited_names.py::no_such_test, pipelines/*.yml, benchmarks/no_such.py, `cfrag/family.py`.

```python
from haystack_cfrag import models
from haystack_cfrag.support import ReaderSupportScorer, NoSuchScorer

scorer = ReaderSupportScorer(chat_generator=models.chat_generator(n_ctx=2048))
```
"""


def test_matcher_reads_only_its_forms():
    cited = citations(SAMPLE, "sample.md")
    literals = string_literals()
    missing = sorted(c.name for c in cited if not exists(c, literals))
    assert sorted(c.name for c in cited) == sorted([
        "models.chat_generator", "haystack_cfrag.models.chat_generator", "registry.resolve",
        "core.text.clean_query", "haystack_cfrag.llm_call", "haystack_cfrag.stage",
        "tests/unit/docs/test_cited_names.py::test_matcher_reads_only_its_forms",
        "tests/unit/docs/test_cited_names.py::no_such_test", "pipelines/*.yml", "benchmarks/no_such.py",
        "cfrag/family.py",
        "haystack_cfrag.support", "haystack_cfrag.models", "haystack_cfrag.support.ReaderSupportScorer",
        "haystack_cfrag.support.NoSuchScorer",
        "haystack_cfrag.models.chat_generator",
    ])
    assert missing == sorted([
        "models.chat_generator", "haystack_cfrag.models.chat_generator",
        "haystack_cfrag.models.chat_generator",
        "core.text.clean_query", "tests/unit/docs/test_cited_names.py::no_such_test", "benchmarks/no_such.py",
        "haystack_cfrag.support.NoSuchScorer",
    ])
