"""CDF-RAG's bounded feedback loop, pure (paper 002, §2.4–2.5): which corrective step follows a checked answer."""

from __future__ import annotations

from dataclasses import dataclass, replace

from haystack_cfrag.cdf_rag.math.causal_check import TAU, should_regenerate
from haystack_cfrag.cdf_rag.math.claims import DELTA, should_rewrite

MAX_REGENERATIONS = 1
"""The paper's fallback generation: one regeneration under stricter grounding."""
MAX_REWRITES = 1
"""One knowledge rewrite."""

# ---------------------------------------------------------------- the loop
ACCEPT, REGENERATE, REWRITE, STOP = "accept", "regenerate", "rewrite", "stop"


@dataclass(frozen=True)
class LoopState:
    """Where the feedback loop stands: the corrective rounds spent, per check, and what each step decided."""

    max_rounds: int = MAX_REGENERATIONS + MAX_REWRITES
    max_regenerations: int = MAX_REGENERATIONS
    max_rewrites: int = MAX_REWRITES
    regenerations: int = 0
    rewrites: int = 0
    done: bool = False
    history: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_rounds", "max_regenerations", "max_rewrites"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10:
                raise ValueError(f"'{name}' must be an integer in [0, 10], got {value!r}.")

    @property
    def rounds(self) -> int:
        """Corrective rounds spent (regenerations + rewrites)."""
        return self.regenerations + self.rewrites


def next_step(
    state: LoopState, s_causal: float | None, s_hall: float | None, *, tau: float = TAU, delta: float = DELTA
) -> tuple[str, LoopState]:
    """The loop's next step and new state: the causal check first, then the hallucination check (a spent budget
    gives way); "stop" when no budget allows the action, "accept" when both pass, "stop" ever after.

    >>> action, s = next_step(LoopState(), 0.0, 1.0)
    >>> action, s.rounds
    ('regenerate', 1)
    >>> next_step(s, 0.0, 0.0)[0], next_step(s, 0.0, 1.0)[0], next_step(s, 1.0, 0.0)[0]
    ('stop', 'rewrite', 'accept')
    """
    if state.done:
        return STOP, state
    regenerate = should_regenerate(s_causal, tau)
    rewrite = should_rewrite(s_hall, delta)
    room = state.rounds < state.max_rounds
    if regenerate and room and state.regenerations < state.max_regenerations:
        action, new = REGENERATE, replace(state, regenerations=state.regenerations + 1)
    elif rewrite and room and state.rewrites < state.max_rewrites:
        action, new = REWRITE, replace(state, rewrites=state.rewrites + 1)
    elif regenerate or rewrite:
        action, new = STOP, replace(state, done=True)
    else:
        action, new = ACCEPT, replace(state, done=True)
    return action, replace(new, history=(*state.history, action))


__all__ = ["ACCEPT", "MAX_REGENERATIONS", "MAX_REWRITES", "REGENERATE", "REWRITE", "STOP", "LoopState",
           "next_step"]
