"""Pure CF-RAG math over numpy arrays and strings (no Haystack): `counterfactuals` (4.1.1), `dedup` (Eq. 4–5),
`stratify` (Eq. 6–7), `arbitration` (Eq. 9–11), `algorithm` (Algorithm 1) and `replies`."""
