"""`DocumentOrder`: the same documents in another fixed order — the order control.

It changes only the order, so `order_rag` measures how many answers change from order alone. Orders (nothing
dropped, the input never changed): ``reverse``; ``lost_in_the_middle`` (1, 3, 5, 4, 2, as Haystack's ranker by
rank); ``rotate`` (2, 3, 4, 5, 1).

    >>> from haystack import Document
    >>> docs = [Document(content=c) for c in "abcde"]
    >>> [d.content for d in DocumentOrder(order="lost_in_the_middle").run(docs)["documents"]]
    ['a', 'c', 'e', 'd', 'b']
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_cfrag.common.validation import check_choice

ORDERS = ("reverse", "lost_in_the_middle", "rotate")


def reorder(items: list[Any], order: str) -> list[Any]:
    """`items` in `order` (see the module doc); a new list.

    >>> reorder([1, 2, 3, 4, 5], "reverse"), reorder([1, 2, 3, 4, 5], "rotate")
    ([5, 4, 3, 2, 1], [2, 3, 4, 5, 1])
    >>> reorder([1, 2, 3, 4], "lost_in_the_middle"), reorder([], "rotate")
    ([1, 3, 4, 2], [])
    """
    if order == "reverse":
        return items[::-1]
    if order == "rotate":
        return items[1:] + items[:1]
    return items[0::2] + items[1::2][::-1]  # lost_in_the_middle: 1, 3, 5, … then …, 4, 2


@component
class DocumentOrder:
    """Put the documents in another fixed order (the order control; see the module doc).

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag.baseline.components import DocumentOrder

    docs = [Document(content=f"passage {i}") for i in range(1, 6)]
    print([d.content[-1] for d in DocumentOrder(order="rotate").run(docs)["documents"]])  # ['2', '3', '4', '5', '1']
    ```
    """

    def __init__(self, *, order: str = "reverse") -> None:
        """
        :param order: ``reverse``, ``lost_in_the_middle`` or ``rotate``.
        :raises ValueError: another order.
        """
        check_choice("order", order, ORDERS)
        self.order = order

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], order: str | None = None) -> dict[str, list[Document]]:
        """The same documents in `order` (default: the one given at init).

        :param documents: the retriever's documents, best first.
        :param order: this run's order, overriding the init one.
        """
        chosen = self.order if order is None else order
        check_choice("order", chosen, ORDERS)
        return {"documents": reorder(list(documents), chosen)}

    @component.output_types(documents=list[Document])
    async def run_async(self, documents: list[Document], order: str | None = None) -> dict[str, list[Document]]:
        """`run`, for `AsyncPipeline` (nothing to await)."""
        return self.run(documents, order=order)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, order=self.order)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocumentOrder:
        """Deserialise the component."""
        return default_from_dict(cls, data)
