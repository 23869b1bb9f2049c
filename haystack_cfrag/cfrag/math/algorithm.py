"""Algorithm 1 (paper 4.2.3) with the conservative override and the duel: pure, over arrays and answers.

`arbitrate` scores each draft (φ per criterion, Ψ), orders the drafts and decides: consensus,
synthesis or the best score (the paper), or — with a baseline and an override margin — the
baseline, an override, or a duel to hold. A duel needs an LLM reading of one passage per
answer; `settle_duel` applies what that reading named. The ranker
(`CausalArbitrationRanker`) prepares the matrices and evidence sets, makes the LLM calls and
writes the trace; this module only decides.

Inputs, over drafts j and documents i (the union of the drafts' evidence):

- `relevance` R: R[0, i] = s(q, e_i), R[1:, i] = s(q'_k, e_i) for the counterfactuals;
- `answer_doc_cosine`: cos(Enc(a_j), Enc(e_i));
- `mentions`: Mention(a_j, e_i) in [0, 1];
- `evidence`: E_j as columns.

Positions returned (`order`, `Override.baseline`, …) are positions in `answers`.

    >>> R = np.array([[0.9, 0.8, 0.7],      # s(q, e): "Who is the lead actor?"
    ...               [0.2, 0.9, 0.8]])     # s(q', e): "Who played the villain?"
    >>> answers = ["Christian Bale", "Heath Ledger"]
    >>> mentions = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    >>> cosine = np.array([[0.6, 0.1, 0.1], [0.1, 0.7, 0.7]])
    >>> rules = Rules(weights=arb.default_weights(0.4))
    >>> a = arbitrate(answers, R, cosine, mentions, [[0], [1, 2]], rules)
    >>> a.decision, a.order, [round(p, 3) for p in a.psi], round(a.scores[1]["causal"], 3)
    ('best_score', (0, 1), [0.73, 0.395], -0.1)

With draft 1 as the baseline (standard RAG's reading), a margin the challenger does not reach
and a duel: the reading of one passage per answer decides.

    >>> duel = arbitrate(answers, R, cosine, mentions, [[0], [1, 2]],
    ...                  replace(rules, override_margin=1.0, duel=True), baseline=1)
    >>> duel.decision, duel.override.decision, duel.override.duel
    ('duel', 'baseline', ((0, 0), (1, 1)))
    >>> settled = settle_duel(duel, "Christian Bale", answers)
    >>> settled.decision, settled.order, settled.override.duel_winner
    ('override', (0, 1), 0)
    >>> settle_duel(duel, "Gary Oldman", answers).decision      # named no candidate: the margin rule stands
    'baseline'

Without a reading (the duel switched off) the margin rule decides, as if no duel had been proposed:

    >>> declined = decline_duel(duel)
    >>> plain = arbitrate(answers, R, cosine, mentions, [[0], [1, 2]], replace(rules, override_margin=1.0), baseline=1)
    >>> (declined.decision, declined.order, declined.override) == (plain.decision, plain.order, plain.override)
    True

A small reader tends to name the answer of the passage it reads first. An override can
therefore be confirmed by a second reading of the same passages in reverse order: it stands
only when that reading names the challenger again.

    >>> needs_confirmation(settled)
    True
    >>> confirm_duel(settled, "Christian Bale", answers).decision
    'override'
    >>> unconfirmed = confirm_duel(settled, "Heath Ledger", answers)
    >>> unconfirmed.decision, unconfirmed.best, unconfirmed.override.confirmed
    ('baseline', 1, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypedDict

import numpy as np

from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.common.text import agreement_matrix, answers_agree

__all__ = ["MENTION_THRESHOLD", "Arbitration", "Decision", "Override", "Rules", "Scores", "arbitrate",
           "confirm_duel", "decline_duel", "duel_candidates", "needs_confirmation", "settle_duel"]

MENTION_THRESHOLD = 0.5

Decision = Literal["consensus", "synthesis", "best_score", "baseline", "override"]
"""How arbitration ended: the paper's three ways, or the conservative override's two."""


class Scores(TypedDict):
    """φ of one draft per criterion (None: the criterion is missing, e.g. φ_causal without counterfactuals)."""

    coherence: float
    causal: float | None
    confidence: float | None
    specificity: float


@dataclass(frozen=True)
class Rules:
    """The decision settings (the ranker's init parameters, with the weights of this call)."""

    weights: dict[str, float]
    """w_k over `arbitration.CRITERIA`, before criteria missing for every draft are renormalised away."""
    coherence_weights: tuple[float, float] = (0.5, 0.5)
    agreement_threshold: float = 0.8
    consensus_threshold: float = 2 / 3
    consensus_min_causal: float | None = None
    synthesis: bool = False
    """Whether a synthesizer can write the answer when there is no consensus."""
    override_margin: float | None = None
    duel: bool = False


@dataclass(frozen=True)
class Override:
    """The conservative override's account: the margin rule, and the duel when one is held."""

    baseline: int
    margin: float
    gap: float | None
    """Ψ(best disagreeing draft) − Ψ(baseline); None when every draft agrees with the baseline."""
    winner: int
    """The margin rule's winner."""
    decision: Decision
    """The margin rule's decision: "baseline" or "override"."""
    duel: tuple[tuple[int, int], ...] = ()
    """(candidate, passage column) pairs, decisive-first; () when no duel is held."""
    duel_answer: str | None = None
    """What the duel's reading named (None until `settle_duel`)."""
    duel_pick: int | None = None
    """The candidate the reading named; None when it named none (or before `settle_duel`)."""
    confirm_answer: str | None = None
    """What the confirming reading (the duel's passages in reverse order) named; None when none was held."""
    confirmed: bool | None = None
    """Whether the confirming reading named `duel_pick` again; None when none was held."""

    @property
    def duel_winner(self) -> int:
        """The duel's winner: the candidate it named (and named again when confirmed), else the margin rule's."""
        if self.duel_pick is None or self.confirmed is False:
            return self.winner
        return self.duel_pick


@dataclass(frozen=True)
class Arbitration:
    """The outcome of `arbitrate`: per-draft scores, the order (winner first) and the decision."""

    order: tuple[int, ...]
    decision: Decision | Literal["duel"]
    """A `Decision`, or "duel" while a duel awaits its reading (see `settle_duel`)."""
    scores: tuple[Scores, ...]
    psi: tuple[float, ...]
    agreements: tuple[float, ...]
    """Share of drafts agreeing with each draft (itself included)."""
    weights: dict[str, float]
    """The weights used: renormalised over the criteria present."""
    margins: np.ndarray | None
    """Per document: s(q, e) − max_{q'} s(q', e); None without counterfactuals."""
    override: Override | None = None

    @property
    def best(self) -> int:
        """Position of the winning draft."""
        return self.order[0]


def arbitrate(
    answers: Sequence[str],
    relevance: np.ndarray,
    answer_doc_cosine: np.ndarray,
    mentions: np.ndarray,
    evidence: Sequence[Sequence[int]],
    rules: Rules,
    *,
    indices: Sequence[int] | None = None,
    token_logprobs: Sequence[Sequence[float] | None] | None = None,
    baseline: int | None = None,
    causal_scores: Sequence[float | None] | None = None,
    dating: np.ndarray | None = None,
) -> Arbitration:
    """Score, order and decide (Algorithm 1; the conservative override when `baseline` and a margin are set).

    :param answers: the drafts' answers (at least one).
    :param indices: the drafts' own numbers: equal Ψ puts the lower first (default: positions).
    :param token_logprobs: per draft, for φ_conf (None: missing).
    :param baseline: position of the baseline draft, if any.
    :param causal_scores: per draft, a φ_causal computed elsewhere (the reader's counterfactual test,
        `arbitration.reader_phi_causal`), used instead of the mean bi-encoder margin of its evidence;
        None for a draft: the bi-encoder's. The duel still orders its passages by the bi-encoder margins.
    :param dating: per document, how well it dates the question's period (`qualifiers.qualifying`: or describes its
        namesake), or per answer and document (`qualifiers.answer_dating`: how well it dates that answer), None when
        the question states none or the ranker reads no qualifier: the duel then also challenges an answer as
        loud as the baseline's whose passage dates the period better, and reads each answer's best-dated passage.
    """
    margins = arb.causal_margins(relevance)
    l1, l2 = rules.coherence_weights
    logprobs = list(token_logprobs) if token_logprobs is not None else [None] * len(answers)
    scores = tuple(
        Scores(
            coherence=arb.phi_coherence(answer_doc_cosine[j], relevance[0], mentions[j], evidence[j],
                                        lambda1=l1, lambda2=l2),
            causal=_causal(margins, evidence[j], causal_scores[j] if causal_scores is not None else None),
            confidence=arb.phi_confidence(logprobs[j]),
            specificity=arb.phi_specificity(answer),
        )
        for j, answer in enumerate(answers)
    )
    available = {k: any(s[k] is not None for s in scores) for k in arb.CRITERIA}
    weights = arb.effective_weights(rules.weights, available)
    psis = tuple(arb.psi(s, weights) for s in scores)
    keys = list(indices) if indices is not None else list(range(len(answers)))
    order = sorted(range(len(psis)), key=lambda j: (-psis[j], keys[j]))
    agreements = tuple(arb.agreement(list(answers), j, rules.agreement_threshold) for j in range(len(answers)))
    best = order[0]
    override = None
    decision: Decision | Literal["duel"]
    if rules.override_margin is not None and baseline is not None:
        agree = list(agreement_matrix(list(answers), rules.agreement_threshold)[baseline] > 0)
        causal = [s["causal"] for s in scores]
        winner, decision, gap = arb.override_decision(psis, causal, agree, baseline, rules.override_margin)
        order = [winner] + [j for j in order if j != winner]
        override = Override(baseline=baseline, margin=rules.override_margin, gap=gap, winner=winner,
                            decision=decision)
        if rules.duel:
            candidates = duel_candidates(answers, agree, baseline, mentions, rules.agreement_threshold, dating)
            pairs = arb.duel_passages(candidates, mentions, relevance[0], margins, MENTION_THRESHOLD, dating)
            if len(pairs) >= 2:
                override = replace(override, duel=tuple(pairs))
                decision = "duel"
    elif agreements[best] >= rules.consensus_threshold - 1e-9 and _causally_supported(scores[best], rules):
        decision = "consensus"
    elif rules.synthesis:
        decision = "synthesis"
    else:
        decision = "best_score"
    return Arbitration(order=tuple(order), decision=decision, scores=scores, psi=psis, agreements=agreements,
                       weights=weights, margins=margins, override=override)


def _causal(margins: np.ndarray | None, evidence: Sequence[int], given: float | None) -> float | None:
    """A draft's φ_causal: the one given, else the bi-encoder's (None without counterfactuals)."""
    if given is not None:
        return float(given)
    return arb.phi_causal(margins, evidence) if margins is not None else None


def duel_candidates(
    answers: Sequence[str],
    agrees_with_baseline: Sequence[bool],
    baseline: int,
    mentions: np.ndarray,
    threshold: float = 0.8,
    dating: np.ndarray | None = None,
) -> list[int]:
    """The baseline and one draft per distinct disagreeing answer that fewer passages name.

    A duel undoes volume: it is held only against answers named by fewer passages than the
    baseline's (the Correlation Trap's signature). Where the challenger is as loud or louder,
    a re-reading only changes the passage order, and the baseline stands. With `dating` (per
    passage, how well it dates the question's period; or per answer and passage), an answer that a
    passage dates to that period better than any passage dates the baseline's is challenged too,
    however loud: the temporal trap's signature is the period, not the count.

    >>> m = np.array([[1, 1, 1], [1, 0, 0], [1, 0, 0], [1, 1, 1]])   # named by 3, 1, 1 and 3 passages
    >>> answers = ["Heath Ledger", "Christian Bale", "christian bale", "Nolan"]
    >>> duel_candidates(answers, [True, False, False, False], 0, m)
    [0, 1]
    >>> m = np.array([[1, 0], [0, 1]])                                  # one passage each; the second dates the period
    >>> duel_candidates(["George Peter", "Jacqueline Kennedy"], [True, False], 0, m)
    [0]
    >>> duel_candidates(["George Peter", "Jacqueline Kennedy"], [True, False], 0, m, dating=np.array([0.0, 1.0]))
    [0, 1]
    >>> rams = np.array([[1, 0], [1, 1]])   # one passage names both, its 1980 an edge; the other dates 1982, inside
    >>> duel_candidates(["Anaheim Stadium", "Coliseum"], [True, False], 0, rams, dating=np.array([0.5, 1.0]))
    [0, 1]
    >>> begun = np.array([[1.0, 1.0], [0.5, 1.0]])   # per answer: the first passage's clause begins Anaheim in 1980
    >>> duel_candidates(["Anaheim Stadium", "Coliseum"], [True, False], 0, rams, dating=begun)
    [0]
    """
    named_by = np.asarray(mentions, dtype=float) >= MENTION_THRESHOLD
    named = named_by.sum(axis=1)
    dated = (np.where(named_by, arb.per_answer(dating, named_by.shape), 0.0).max(axis=1, initial=0.0)
             if dating is not None else np.zeros(len(answers)))
    distinct = [baseline]
    for j, answer in enumerate(answers):
        challenges = named[j] < named[baseline] or dated[j] > dated[baseline]
        if j != baseline and not agrees_with_baseline[j] and challenges and not any(
            answers_agree(answer, answers[k], threshold) for k in distinct
        ):
            distinct.append(j)
    return distinct


def settle_duel(arbitration: Arbitration, named: str, answers: Sequence[str], threshold: float = 0.8) -> Arbitration:
    """Apply the duel's reading: the candidate whose answer `named` agrees with wins, first in the order.

    When the reading named none of the candidates, the margin rule's winner and decision stand.
    """
    override = arbitration.override
    if arbitration.decision != "duel" or override is None:
        raise ValueError("settle_duel needs an arbitration whose decision is 'duel'.")
    pick = next((j for j, _ in override.duel if named and answers_agree(named, answers[j], threshold)), None)
    if pick is None:
        decision: Decision = override.decision
    else:
        decision = "baseline" if pick == override.baseline else "override"
    settled = replace(override, duel_answer=named, duel_pick=pick)
    return _with_duel_outcome(arbitration, settled, decision)


def decline_duel(arbitration: Arbitration) -> Arbitration:
    """A duel proposed but not read: the margin rule's decision, and no duel in the account."""
    override = arbitration.override
    if arbitration.decision != "duel" or override is None:
        raise ValueError("decline_duel needs an arbitration whose decision is 'duel'.")
    return replace(arbitration, decision=override.decision, override=replace(override, duel=()))


def needs_confirmation(arbitration: Arbitration) -> bool:
    """Whether a settled duel replaced the baseline and has not been confirmed yet (see `confirm_duel`)."""
    override = arbitration.override
    return (arbitration.decision == "override" and override is not None and bool(override.duel)
            and override.duel_pick is not None and override.duel_pick != override.baseline
            and override.confirmed is None)


def confirm_duel(arbitration: Arbitration, named: str, answers: Sequence[str], threshold: float = 0.8) -> Arbitration:
    """Apply the confirming reading (the duel's passages in reverse order) to a duel that replaced the baseline.

    The override stands only when `named` agrees with the duel's pick again; otherwise the
    margin rule's winner and decision stand, as when the duel names no candidate.
    """
    override = arbitration.override
    if override is None or override.duel_pick is None or not needs_confirmation(arbitration):
        raise ValueError("confirm_duel needs a settled duel that replaced the baseline and was not confirmed.")
    confirmed = bool(named) and answers_agree(named, answers[override.duel_pick], threshold)
    settled = replace(override, confirm_answer=named, confirmed=confirmed)
    decision: Decision = "override" if confirmed else override.decision
    return _with_duel_outcome(arbitration, settled, decision)


def _with_duel_outcome(arbitration: Arbitration, override: Override, decision: Decision) -> Arbitration:
    """`arbitration` with the duel's account, its decision, and the duel's winner first in the order."""
    winner = override.duel_winner
    order = (winner,) + tuple(j for j in arbitration.order if j != winner)
    return replace(arbitration, order=order, decision=decision, override=override)


def _causally_supported(scores: Scores, rules: Rules) -> bool:
    """Whether a consensus may end arbitration (always, unless `consensus_min_causal` is set and φ_causal is lower)."""
    causal = scores["causal"]
    return rules.consensus_min_causal is None or causal is None or causal >= rules.consensus_min_causal
