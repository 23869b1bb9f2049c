"""Hayhooks wrapper of pipelines/standard_rag.yml (see haystack_cfrag.serving.wrapper and docs/serving.md)."""

from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper, Question


class PipelineWrapper(CFRAGPipelineWrapper):
    pipeline_name = "standard_rag"

    def run_api(self, question: Question) -> dict:
        """
        Answer a question with standard RAG (top-k retrieval, one generation): the baseline of CF-RAG.

        :param question: the question (1 to 2000 characters, not blank).
        :returns: the answer and the documents it was given (no trace: there is no arbitration).
        """
        return self._answer(question, {})
