"""Running any pipeline file on a store with chosen models: what `cfrag ask/compare`, the evaluation and the server use.

- `runtime.Runtime`: runs questions (`ask`), building each file once around the runtime's parts;
- `model_parts.ModelParts`: the reader, the embedders, the scorer and the auxiliary model, loaded once and lent;
- `store_parts.StoreParts`: the store, its retrievers and what a family builds over it (CausalRAG's graph),
  opened, built, or kept beside the store;
- `parts.RuntimeParts`: how those parts reach a pipeline (roles read from the sockets a file wires, the types
  a component declares and the file's metadata);
- `outputs`: reading a run (`Answer`, `read_outputs`).

Loading a pipeline file without a runtime: `haystack_cfrag.pipelines.loading`.
"""

from haystack_cfrag.runtime.outputs import Answer, read_outputs
from haystack_cfrag.runtime.runtime import Runtime

__all__ = ["Answer", "Runtime", "read_outputs"]
