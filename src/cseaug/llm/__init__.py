"""LLM backends behind one interface (:class:`cseaug.llm.base.LLMBackend`)."""
