"""Property tests of the pure math: random sizes 0–200, duplicates, degenerate vectors."""

import unicodedata

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.math.counterfactuals import TRANSFORMATION_TYPES
from haystack_cfrag.cfrag.math.dedup import greedy_dedup
from haystack_cfrag.cfrag.math.replies import MAX_ANSWER_CHARS, parse_counterfactual_reply, parse_draft_reply
from haystack_cfrag.cfrag.math.stratify import spectral_clusters, stratified_subsets
from haystack_cfrag.common.text import clean_query, truncate_text
from haystack_cfrag.common.vectors import cosine_matrix, valid_embedding_mask

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def embeddings(draw, max_n=200):
    n = draw(st.integers(0, max_n))
    d = draw(st.integers(1, 8))
    base = draw(arrays(np.float64, (n, d), elements=finite))
    if n and draw(st.booleans()):  # exact duplicates and all-zero rows
        k = draw(st.integers(0, n - 1))
        base[k:] = base[0] if draw(st.booleans()) else 0.0
    return base


@settings(max_examples=60, deadline=None)
@given(embeddings(), st.floats(0.5, 1.0))
def test_dedup_keeps_a_valid_increasing_subset(emb, threshold):
    kept = greedy_dedup(emb, threshold)
    assert kept == sorted(set(kept)) and all(0 <= i < len(emb) for i in kept)
    if len(emb):
        assert kept[0] == 0  # the most relevant document always survives
        sims = cosine_matrix(emb[kept], emb[kept])
        off = sims[~np.eye(len(kept), dtype=bool)]
        assert np.all(off <= threshold + 1e-9)  # no two kept documents are near-duplicates


@settings(max_examples=40, deadline=None)
@given(embeddings(max_n=60), st.integers(1, 6), st.integers(1, 5), st.floats(0.2, 1.0), st.integers(0, 2**16))
def test_subsets_are_non_empty_and_drawn_from_their_clusters(emb, k, m, rho, seed):
    labels = spectral_clusters(emb, k, random_state=seed)
    assert len(labels) == len(emb)
    if len(emb) == 0:
        assert stratified_subsets(labels, np.zeros(0), n_subsets=m) == [[] for _ in range(m)]
        return
    assert set(labels) == set(range(labels.max() + 1)) and labels.max() < min(k, len(emb))
    rel = np.linspace(1.0, 0.1, len(emb))
    subsets = stratified_subsets(labels, rel, n_subsets=m, sampling_ratio=rho, random_state=seed)
    assert len(subsets) == m
    for subset in subsets:
        assert subset and len(subset) == len(set(subset))
        assert {int(labels[i]) for i in subset} == set(labels.tolist())  # n_m ≥ 1 from every cluster
    assert subsets == stratified_subsets(labels, rel, n_subsets=m, sampling_ratio=rho, random_state=seed)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 200), st.integers(0, 5), st.integers(1, 20), st.integers(1, 5), st.integers(0, 2**16))
def test_scores_finite_and_causal_volume_invariant(n_docs, n_cf, n_ev, alpha, seed):
    rng = np.random.default_rng(seed)
    rel = rng.uniform(0, 1, size=(1 + n_cf, n_docs))
    evidence = rng.integers(0, n_docs, size=n_ev).tolist()
    margins = arb.causal_margins(rel)
    cos = rng.uniform(-1, 1, size=n_docs)
    mention = rng.uniform(0, 1, size=n_docs)
    coh = arb.phi_coherence(cos, rel[0], mention, evidence)
    assert np.isfinite(coh)
    if margins is None:
        assert n_cf == 0
        return
    causal = arb.phi_causal(margins, evidence)
    assert np.isfinite(causal) and -1 <= causal <= 1
    assert arb.phi_causal(margins, evidence * alpha) == causal  # Lemma 2, exactly
    assert arb.phi_coherence(cos, rel[0], mention, evidence * alpha) == coh
    psi = arb.psi({"coherence": coh, "causal": causal}, arb.default_weights(float(rng.uniform())))
    assert np.isfinite(psi)


@given(st.text(max_size=200))
def test_specificity_in_unit_interval(answer):
    assert 0.0 <= arb.phi_specificity(answer) <= 1.0 + 1e-12


# ------------------------------------------------------------------ reliability (issue 6)
@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=0, max_size=200),
    st.lists(st.sampled_from([0.0, 0.5, 1.0, np.nan, np.inf, -np.inf]), min_size=200, max_size=200),
    st.integers(1, 5),
    st.integers(0, 3),
    st.integers(0, 2**16),
)
def test_subsets_survive_degenerate_relevance(labels_raw, rel_raw, m, anchors, seed):
    labels = np.array(labels_raw, dtype=int) % max(1, len(set(labels_raw)))
    rel = np.array(rel_raw[: len(labels)])
    subsets = stratified_subsets(labels, rel, n_subsets=m, anchors=anchors, random_state=seed)
    assert len(subsets) == m
    for subset in subsets:
        assert len(subset) == len(set(subset)) and all(0 <= i < len(labels) for i in subset)
        assert {int(labels[i]) for i in subset} == set(labels.tolist())


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.integers(1, 5), st.integers(1, 20), st.integers(0, 2**16))
def test_causal_margin_is_zero_when_counterfactuals_match_the_query(n_docs, n_cf, n_ev, seed):
    rng = np.random.default_rng(seed)
    row = rng.uniform(0, 1, size=n_docs)
    rel = np.tile(row, (1 + n_cf, 1))  # every counterfactual as relevant as the query: pure correlation
    evidence = rng.integers(0, n_docs, size=n_ev).tolist()
    assert arb.phi_causal(arb.causal_margins(rel), evidence) == 0.0


_vector = st.one_of(
    st.none(),
    st.lists(st.sampled_from([0.0, 1.0, -2.5, np.nan, np.inf]), min_size=0, max_size=4),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_vector, max_size=30))
def test_valid_embedding_mask_matches_its_definition(vectors):
    mask = valid_embedding_mask(vectors)
    lengths = [len(v) for v in vectors if v is not None and len(v) > 0]
    dim = max(set(lengths), key=lengths.count) if lengths else 0
    for v, ok in zip(vectors, mask, strict=True):
        expected = (
            v is not None and dim > 0 and len(v) == dim
            and all(np.isfinite(v)) and any(x != 0.0 for x in v)
        )
        assert bool(ok) == expected


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.integers(1, 120))
def test_clean_query_is_clean_idempotent_and_truncation_bounded(text, limit):
    cleaned = clean_query(text)
    assert not any(unicodedata.category(ch).startswith("C") for ch in cleaned)
    assert cleaned == cleaned.strip() and "  " not in cleaned
    assert clean_query(cleaned) == cleaned
    assert len(truncate_text(cleaned, limit)) <= limit
    assert cleaned.startswith(truncate_text(cleaned, limit))


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.text(max_size=400), st.just("Answer: " + "x" * 5000), st.just('{"answer": ["a"]}')))
def test_reply_parsers_never_raise_and_stay_bounded(text):
    parsed = parse_draft_reply(text)
    assert isinstance(parsed["answer"], str) and len(parsed["answer"]) <= MAX_ANSWER_CHARS
    assert all(isinstance(i, int) for i in parsed["key_evidence"])
    hint, candidates = parse_counterfactual_reply(text)
    assert isinstance(hint, str)
    assert all(c["question"] and c["type"] in (*TRANSFORMATION_TYPES, "unknown") for c in candidates)
