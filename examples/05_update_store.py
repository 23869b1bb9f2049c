"""Example 5: keep a store up to date with your files from Python: the write `cfrag index` makes, as one call.

`update_store` takes the store's lock, plans what changes by file (added, replaced, removed, kept),
embeds only what is new or changed, saves, and (with `graph=GraphBuild()`) builds CausalRAG's graph
beside the store; `preparation` (the registry's) marks that graph stale when the passages change. A
file that gives no text (emptied, a PDF cut short) keeps its passages; `prune` removes only those
whose every file is gone, and refuses to empty the store unless `force`.
    python examples/05_update_store.py [FOLDER]      # default: a temporary folder
"""

import sys
import tempfile
from pathlib import Path

from haystack_cfrag.registry import store_preparation
from haystack_cfrag.stores.update import update_store


def write_notes(folder: Path) -> Path:
    """A small corpus: three text files."""
    notes = folder / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "rivers.txt").write_text("Heavy rain causes the river to flood the valley.", encoding="utf-8")
    (notes / "roads.txt").write_text("Floods close the mountain roads for days.", encoding="utf-8")
    (notes / "schools.txt").write_text("Closed roads delay the school buses.", encoding="utf-8")
    return notes


def keep_up_to_date(store: str, notes: Path, embedder) -> list[str]:
    """Index, edit one file, empty another, delete a third, and show what each update did, by file."""
    shown = []
    graph = store_preparation()  # CausalRAG's graph beside the store: marked stale when its passages change

    def show(step: str, done) -> None:
        shown.append(f"{step}: {done.plan.summary()} (store has {done.count})")
        shown.extend(f"    {line}" for line in done.plan.by_file())

    show("first build", update_store(store, [notes], embedder=embedder, preparation=graph))
    (notes / "rivers.txt").write_text("Heavy rain causes landslides in the valley.", encoding="utf-8")
    (notes / "schools.txt").write_text("", encoding="utf-8")  # a half-synced file: its passage is kept
    show("dry run", update_store(store, [notes], embedder=embedder, preparation=graph, dry_run=True))
    show("update", update_store(store, [notes], embedder=embedder, preparation=graph))
    (notes / "roads.txt").unlink()
    show("prune", update_store(store, [notes], embedder=embedder, preparation=graph, prune=True))
    return shown


if __name__ == "__main__":
    from haystack_cfrag import models

    folder = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="cfrag-update-"))
    for line in keep_up_to_date(f"faiss:{folder / 'store'}", write_notes(folder), models.EMBEDDED_EMBEDDER):
        print(line)
