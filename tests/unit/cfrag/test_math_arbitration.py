import numpy as np
import pytest

from haystack_cfrag.cfrag.math import arbitration as arb

# relevance: row 0 = s(q, e); rows 1.. = counterfactuals; 3 documents
R = np.array([[0.9, 0.6, 0.5], [0.3, 0.8, 0.5], [0.4, 0.7, 0.2]])


def test_causal_margins_and_phi_causal_eq11():
    margins = arb.causal_margins(R)
    assert margins.tolist() == pytest.approx([0.9 - 0.4, 0.6 - 0.8, 0.5 - 0.5])
    assert arb.phi_causal(margins, [0, 1]) == pytest.approx((0.5 - 0.2) / 2)
    assert arb.causal_margins(R[:1]) is None  # no counterfactual: criterion missing


def test_phi_coherence_eq9_10():
    cos = np.array([0.8, 0.2, 0.0])
    mention = np.array([1.0, 0.0, 0.5])
    # e0: 0.5·0.8 + 0.5·0.9·1 = 0.85; e2: 0 + 0.5·0.5·0.5 = 0.125 → mean 0.4875
    assert arb.phi_coherence(cos, R[0], mention, [0, 2]) == pytest.approx(0.4875)


@pytest.mark.parametrize("alpha", [2, 3, 7])
def test_lemma2_volume_invariance(alpha):
    margins = arb.causal_margins(R)
    evidence = [0, 1]
    base_causal = arb.phi_causal(margins, evidence)
    base_coh = arb.phi_coherence(np.array([0.8, 0.2, 0.0]), R[0], np.array([1.0, 0.0, 0.5]), evidence)
    # duplicated references to the same documents
    assert arb.phi_causal(margins, evidence * alpha) == pytest.approx(base_causal)
    # duplicated *copies* (new columns with the same scores), the store-level duplication
    r_dup = np.hstack([R] + [R[:, evidence]] * (alpha - 1))
    copies = evidence + list(range(3, 3 + len(evidence) * (alpha - 1)))
    assert arb.phi_causal(arb.causal_margins(r_dup), copies) == pytest.approx(base_causal)
    weights = arb.default_weights(0.4)
    scores = {"coherence": base_coh, "causal": base_causal}
    psi_dup = arb.psi(
        {"coherence": arb.phi_coherence(
            np.array([0.8, 0.2, 0.0]), R[0], np.array([1.0, 0.0, 0.5]), evidence * alpha),
         "causal": arb.phi_causal(margins, evidence * alpha)},
        weights,
    )
    assert psi_dup == pytest.approx(arb.psi(scores, weights))


def test_phi_confidence_and_specificity():
    assert arb.phi_confidence([np.log(0.5), np.log(0.5)]) == pytest.approx(0.5)
    assert arb.phi_confidence(None) is None
    assert arb.phi_specificity("Bale") == 0.0
    assert arb.phi_specificity("Christian Bale") == pytest.approx(0.0)  # two distinct keywords: H = log 2
    # keywords [bale, bale, bale, wayne]: p = (3/4, 1/4); 1 − H/log 2
    h = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert arb.phi_specificity("Bale Bale Bale Wayne") == pytest.approx(1 - h / np.log(2))


def test_weights_renormalised_when_criteria_missing():
    w = arb.effective_weights(
        {"coherence": 0.5, "causal": 0.3, "confidence": 0.2, "specificity": 0.0},
        {"coherence": True, "causal": True, "confidence": False, "specificity": True},
    )
    assert w["confidence"] == 0.0
    assert w["coherence"] == pytest.approx(0.625) and w["causal"] == pytest.approx(0.375)
    assert arb.psi({"coherence": 0.4, "causal": 0.1, "confidence": None}, w) == pytest.approx(0.2875)


def test_agreement_share():
    assert arb.agreement(["Bale", "Christian Bale", "bale"], 0, threshold=0.8) == pytest.approx(2 / 3)
    assert arb.agreement([], 0) == 0.0


def test_theorem1_volume_vs_causal_arbitration():
    """Spurious evidence outnumbers causal evidence beyond s̄*/s̄′: summed relevance picks it; Ψ with λ > λ* does not."""
    s_causal, s_spur = 0.8, 0.6  # s̄* and s̄′: the causal passage is more relevant one by one
    n_causal, n_spur = 1, 4  # but spurious passages outnumber it: 4 > 0.8/0.6
    assert n_spur / n_causal > s_causal / s_spur
    rel_q = np.array([s_causal] + [s_spur] * n_spur)
    # counterfactual "who played the villain?" supports the reviews more than the original does
    rel_cf = np.array([0.3] + [0.75] * n_spur)
    relevance = np.vstack([rel_q, rel_cf])
    votes = arb.summed_relevance(rel_q, {"Bale": [0], "Ledger": [1, 2, 3, 4]})
    assert max(votes, key=votes.get) == "Ledger"

    margins = arb.causal_margins(relevance)
    ev = {"Bale": [0], "Ledger": [1, 2, 3, 4]}
    cos = {"Bale": np.array([0.3, 0.1, 0.1, 0.1, 0.1]), "Ledger": np.array([0.1, 0.7, 0.7, 0.7, 0.7])}
    mention = {"Bale": np.array([1.0, 0, 0, 0, 0]), "Ledger": np.array([0, 1.0, 1.0, 1.0, 1.0])}
    coh = {a: arb.phi_coherence(cos[a], rel_q, mention[a], ev[a]) for a in ev}
    causal = {a: arb.phi_causal(margins, ev[a]) for a in ev}
    assert coh["Ledger"] > coh["Bale"] and causal["Bale"] > causal["Ledger"]
    lam_star = arb.critical_causal_weight(coh["Bale"], coh["Ledger"], causal["Bale"], causal["Ledger"])
    assert 0 < lam_star < 1

    def winner(lam):
        w = arb.default_weights(lam)
        psi = {a: arb.psi({"coherence": coh[a], "causal": causal[a]}, w) for a in ev}
        return max(psi, key=psi.get)

    assert winner(min(1.0, lam_star + 0.05)) == "Bale"
    assert winner(max(0.0, lam_star - 0.05)) == "Ledger"
    assert winner(0.0) == "Ledger"  # λ = 0, "w/o causal verification", falls into the trap
