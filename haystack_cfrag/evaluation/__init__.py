"""Evaluation building blocks (the `cfrag eval` runner comes with the evaluation issue).

- `metrics`    strict EM/F1 (SQuAD/HotpotQA normalisation), lenient containment, paired bootstrap
- `injection`  adversarial distractors that never contain the answer (paper 6.6)
"""
