"""CER, "Learning Causally Sufficient Evidence Sets for Verifiable and Trustworthy RAG" (paper 003), zero-shot
(docs/cer.md): the smallest set of the retrieved passages whose quality F̂(q, S) reaches θ, with each one's necessity.
"""
