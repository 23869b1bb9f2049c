"""Components of the controls: `DocumentOrder` (the same documents in another fixed order)."""

from haystack_cfrag.baseline.components.document_order import ORDERS, DocumentOrder

__all__ = ["ORDERS", "DocumentOrder"]
