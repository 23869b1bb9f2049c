"""Running any pipeline file on a store with chosen models (`cfrag ask/compare`, the evaluation, the server):
`Runtime` runs questions; `ModelParts` and `StoreParts` hold the models and the store; `RuntimeParts` hands them
to a pipeline by role; `outputs` reads a run. Without a runtime: `pipelines.loading`."""

from haystack_cfrag.runtime.outputs import Answer, read_outputs
from haystack_cfrag.runtime.runtime import Runtime

__all__ = ["Answer", "Runtime", "read_outputs"]
