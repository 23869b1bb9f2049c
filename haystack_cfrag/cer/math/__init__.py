"""CER's pure math (paper 003): `settings`, `quality` (Eq. 3–7, 17–19), `search` (Algorithm 1) and
`hard_negatives`. No Haystack imports here."""
