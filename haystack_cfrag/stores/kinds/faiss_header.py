"""A FAISS index file checked against its size before faiss reads it.

faiss trusts the sizes an index file states (a 53-byte file can make it allocate gigabytes). `check_index` walks the
index kinds this package writes (``IxMp`` around ``IxF2``/``IxFI`` or ``IHNf``), reading only fixed fields and
stated lengths: every array must fit in the bytes that remain and agree with the header, and the walk end exactly
at the file's end. Anything else is refused in one line; `read_index` then gives faiss the checked descriptor.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import IO, Any

from haystack_cfrag.stores.safe_files import open_checked, size_of

ID_MAPS = (b"IxMp", b"IxM2")
FLATS = (b"IxF2", b"IxFI")  # IndexFlatL2, IndexFlatIP
HNSW_FLAT = b"IHNf"
MAX_DIM = 1 << 16
_HEADER = struct.Struct("<4siqqqBi")  # fourcc, d, ntotal, two unused int64, is_trained, metric_type


class _Walk:
    def __init__(self, fh: IO[bytes], size: int, path: Path) -> None:
        self.fh, self.size, self.path = fh, size, path

    def fail(self, why: str) -> ValueError:
        return ValueError(f"{self.path} is not a FAISS index cfrag can check ({why}); nothing read.")

    def take(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) != n:
            raise self.fail("it ends early")
        return data

    def header(self) -> tuple[bytes, int, int]:
        fourcc, d, ntotal, _, _, _, metric = _HEADER.unpack(self.take(_HEADER.size))
        if metric > 1:
            self.take(4)  # metric_arg
        if not 0 < d <= MAX_DIM or ntotal < 0:
            raise self.fail(f"its header states {ntotal} vectors of {d} dimensions")
        return fourcc, d, ntotal

    def array(self, item: int, what: str, count: int | None = None) -> int:
        """Skip one array (its uint64 length, then length × item bytes) after checking that it fits."""
        (n,) = struct.unpack("<Q", self.take(8))
        left = self.size - self.fh.tell()
        if n > left // item:
            raise self.fail(f"its {what} claims {n} × {item} bytes, {left} remain in the file")
        if count is not None and n != count:
            raise self.fail(f"its {what} holds {n} entries, the header states {count}")
        self.fh.seek(n * item, 1)
        return n

    def index(self, inner: bool = False) -> tuple[int, int]:
        fourcc, d, ntotal = self.header()
        if fourcc in ID_MAPS and not inner:
            sub_d, sub_n = self.index(inner=True)
            if (sub_d, sub_n) != (d, ntotal):
                raise self.fail(f"its id map states {ntotal}×{d}, its index {sub_n}×{sub_d}")
            self.array(8, "id map", ntotal)
        elif fourcc in FLATS:
            self.array(4, "vectors", ntotal * d)
        elif fourcc == HNSW_FLAT:
            self.array(8, "level probabilities")
            self.array(4, "neighbours per level")
            self.array(4, "levels", ntotal)
            self.array(8, "offsets", ntotal + 1)
            self.array(4, "neighbours")
            self.take(4 * 5)  # entry point, max level, efConstruction, efSearch, upper beam
            storage = self.index(inner=True)
            if storage != (d, ntotal):
                raise self.fail(f"its HNSW graph states {ntotal}×{d}, its vectors {storage[1]}×{storage[0]}")
        else:
            raise self.fail(f"index kind {fourcc!r}; cfrag reads Flat and HNSW indexes")
        return d, ntotal


def check_index(fh: IO[bytes], path: Path) -> tuple[int, int]:
    """(d, ntotal) of the index in `fh` (at its start) when its structure fits its size exactly; `fh` is left at 0.

    :raises ValueError: one line naming `path`.
    """
    size = size_of(fh)
    walk = _Walk(fh, size, path)
    fh.seek(0)
    try:
        d, ntotal = walk.index()
    except struct.error as exc:  # pragma: no cover  (take() returns whole fields)
        raise walk.fail("a field is cut") from exc
    if fh.tell() != size:
        raise walk.fail(f"{size - fh.tell()} bytes follow the index")
    fh.seek(0)
    return d, ntotal


def read_index(path: str | Path) -> Any:
    """The faiss index in `path`: opened by `safe_files.open_checked`, checked by `check_index`, then read by faiss
    from the same descriptor.

    :raises FileNotFoundError: no file.
    :raises ValueError: one line naming the file.
    """
    import faiss  # noqa: PLC0415

    path = Path(path)
    with open_checked(path, "faiss") as fh:
        check_index(fh, path)
        try:
            return faiss.read_index(faiss.PyCallbackIOReader(fh.read, 1 << 20))
        except RuntimeError as exc:
            raise ValueError(f"{path} does not load as a FAISS index ({' '.join(str(exc).split())[:100]}); "
                             "nothing read.") from exc


__all__ = ["check_index", "read_index"]
