"""Pure CF-RAG math over numpy arrays and strings: no Haystack imports here.

- `text`            normalisation, token F1, mention, agreement, keywords
- `vectors`         cosine, relevance rescaling, embedding checks
- `counterfactuals` V(q, q') and Info(q, q')                    (4.1.1)
- `dedup`           greedy near-duplicate removal, Q(e)          (Eq. 4–5)
- `stratify`        affinity, Laplacian, clustering, sampling    (Eq. 6–7)
- `arbitration`     φ_coh, φ_causal, φ_conf, φ_spec, Ψ, agreement (Eq. 9–11, Alg. 1)
- `algorithm`       Algorithm 1's loop: score, order, decide (consensus, override, duel)
- `replies`         parsing model replies
"""
