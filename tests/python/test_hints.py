"""The hints of the attention puzzles: a failing solution is sent to the line its mistake is on."""
import numpy as np
import pytest

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


class _Scaled:
    """The machine whose m.tau is another scale: the student's S_ij = s Q_i K_j^T with s = 1, 1/d or sqrt(d)."""
    def __init__(self, m, scale):
        self._m_, self.tau = m, scale(m.d)

    def __getattr__(self, name):
        return getattr(self._m_, name)


def scaled(fn, scale):
    return lambda m: fn(_Scaled(m, scale))


@pytest.mark.parametrize("puzzle,fn,scale,says", [
    ("algorithm-1", S.algorithm_1_with(), lambda d: 1.0, "s = 1 (no scale), but the scale is tau = 1/sqrt(d) = 0.5"),
    ("algorithm-1", S.algorithm_1_with(), lambda d: 1.0 / d, "s = 1/d = 0.25, but the scale is tau"),
    ("block-update", S.block_update_with(), lambda d: 1.0, "s = 1 (no scale)"),
    ("block-update", S.block_update_with(), lambda d: np.sqrt(d), "s = sqrt(d) = 2,"),
    ("fa2-order", S.fa2_with(), lambda d: 1.0 / d, "s = 1/d = 0.25"),
    ("causal", S.fa2_with(causal=True), lambda d: 1.0, "s = 1 (no scale)"),
])
def test_a_wrong_scale_is_named(puzzle, fn, scale, says):
    """Every score moves, so the first store that departs is a max (algorithm-1, block-update) or L
    (fa2-order, causal): their hints ("max not carried?", "L_i = m_i + log l_i") would point at the
    wrong line. The judge recognises the values of the scales students write instead of tau."""
    r = puzzles.check(puzzle, scaled(fn, scale))
    assert not r.passed
    assert says in r.message and "S_ij = tau Q_i K_j^T" in r.message, r.message
    assert "max not carried" not in r.message and "L_i = m_i + log l_i" not in r.message, r.message


@pytest.mark.parametrize("puzzle,fn", [
    ("algorithm-1", S.algorithm_1_with(carry_max=False)), ("block-update", S.block_update_with(carry_max=False)),
    ("fa2-order", S.fa2_with(normalise=False))])
def test_other_mistakes_are_not_called_a_wrong_scale(puzzle, fn):
    r = puzzles.check(puzzle, fn)
    assert not r.passed and "the scale is tau" not in r.message, r.message


def test_a_tile_freed_twice_is_named_as_freed_already():
    """The starter's m.free(Kj); m.free(Vj) kept after K_j, V_j were moved into a `with m.sram():`
    block (as the notebook's solution has them): the block freed them, and the message said "not a
    tile held in SRAM ... or load it inside a `with m.sram():` block", which the student had done."""
    def starter_free_kept(m):
        for j in range(m.Tc):
            with m.sram():
                Kj, Vj = m.load("K", *S.rows(j, m.Bc, m.nk)), m.load("V", *S.rows(j, m.Bc, m.nk))
                for i in range(m.Tr):
                    with m.sram():
                        q0, q1, Qi, Oi, li, mi = S.alg1_loads(m, i, j)
                        On, ln, mn = S.alg1_update(Qi, Kj, Vj, Oi, li, mi, m.tau)
                        m.store("O", q0, q1, On), m.store("l", q0, q1, ln), m.store("m", q0, q1, mn)
            m.free(Kj)
            m.free(Vj)
    r = puzzles.check("algorithm-1", starter_free_kept)
    assert "your function stopped: m.free(K[0:4]): this tile has already left SRAM" in r.message, r.message
    assert "free each tile once" in r.message and "load it inside" not in r.message, r.message


class _FloorBlocks:
    """The machine whose Tr or Tc is Nq // Br or Nk // Bc: the student's own loop bound, which
    leaves out the short last block of a ragged problem."""
    def __init__(self, m, which):
        self._m_, self._which = m, which

    def __getattr__(self, name):
        if name == self._which:
            return self._m_.nq // self._m_.Br if name == "Tr" else self._m_.nk // self._m_.Bc
        return getattr(self._m_, name)


@pytest.mark.parametrize("puzzle,which,says", [
    ("fa2-order", "Tc", "K[12:13] was never loaded, and every row's softmax needs those keys. Hint: loop j over "
                        "range(m.Tc)"),
    ("fa2-order", "Tr", "Q[8:10] was never loaded, and O and L of those rows were never computed. Hint: loop i "
                        "over range(m.Tr)"),
    ("causal", "Tc", "K[8:10] was never loaded, and the last row keeps every key"),
    ("causal", "Tr", "Q[4:6] was never loaded"),
])
def test_a_block_left_out_of_the_loops_is_named(puzzle, which, says):
    """Was: "L_0 = 2.634 but FlashAttention-2 has 2.711. Hint: L_i = m_i + log l_i" for the keys
    left out, and "O[8, 0] = 0 ... Hint: O_i^(j) = diag(...)" for the rows never computed."""
    fn = S.fa2_with(causal=puzzle == "causal")
    r = puzzles.check(puzzle, lambda m: fn(_FloorBlocks(m, which)))
    assert not r.passed
    assert says in r.message and "leaves it out" in r.message, r.message
