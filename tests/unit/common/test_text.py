import numpy as np
import pytest

from haystack_cfrag.common import text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("The Dark Knight!", "dark knight"), ("  An  apple, a day ", "apple day"), ("Bale's", "bales")],
)
def test_normalize_answer_matches_squad(raw, expected):
    assert text.normalize_answer(raw) == expected


def test_token_f1_hand_computed():
    # pred tokens [christian, bale], ref [bale]: P = 1/2, R = 1, F1 = 2/3
    assert text.token_f1("Christian Bale", "Bale") == pytest.approx(2 / 3)
    assert text.token_f1("", "") == 1.0
    assert text.token_f1("x", "") == 0.0


def test_agreement_uses_normalisation_or_f1():
    assert text.answers_agree("The Beatles", "beatles")
    assert not text.answers_agree("Christian Bale", "Bale", threshold=0.8)  # F1 2/3 < 0.8
    assert text.answers_agree("Christian Bale", "Bale", threshold=0.6)
    m = text.agreement_matrix(["Bale", "bale.", "Ledger"])
    assert m.tolist() == [[True, True, False], [True, True, False], [False, False, True]]


def test_mention_whole_phrase_and_partial():
    assert text.mention("Christian Bale", "Cast: Christian Bale as Batman") == 1.0
    assert text.mention("Christian Bale", "Bale returns") == 0.5
    assert text.mention("", "anything") == 0.0
    assert text.mention("Al", "Alan") == 0.0  # whole tokens only


def test_bag_of_words_rows_are_unit_or_zero():
    m = text.bag_of_words_matrix(["red apple", "", "apple apple"])
    assert np.allclose(np.linalg.norm(m, axis=1), [1.0, 0.0, 1.0])
