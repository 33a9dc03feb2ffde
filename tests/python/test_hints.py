"""The hints of the attention puzzles: a failing solution is sent to the line its mistake is on."""
import solutions as S
from flashstep import puzzles


def test_a_causal_mask_that_drops_the_diagonal_is_not_called_an_overflow():
    """c < r + Nk - Nq leaves row 0 of the square problem no key: L_0 = log 0 = -inf and O_0 = 0 / 0.
    Nothing overflowed, so the rescale hint would be wrong: the hint names the row and the mask."""
    r = puzzles.check("causal", S.fa2_with(causal=True, drop_diagonal=True))
    assert not r.passed
    assert "L_0 = -inf but FlashAttention-2 (causal) has" in r.message, r.message
    assert "row 0 kept no key" in r.message and "mask with <=, not <" in r.message, r.message
    assert "overflowed" not in r.message, r.message


def test_an_l_never_summed_is_not_called_an_overflow():
    r = puzzles.check("fa2-order", S.fa2_with(sum_l=False))
    assert not r.passed
    assert "L_0 = -inf" in r.message and "l_0 = 0, no term e^(S - m) of row 0 was summed" in r.message, r.message
    assert "overflowed" not in r.message, r.message


def test_an_overflow_is_still_called_one():
    """The max of the first block kept (no rescale) on the problem whose scores jump by 1000: inf, not -inf."""
    r = puzzles.check("causal", S.fa2_with(causal=True, rescale=False))
    assert "e^(S - m) overflowed" in r.message and "kept no key" not in r.message, r.message
