"""The attention puzzles' problems and the texts of their hints (flashstep.puzzles)."""
import numpy as np

from ._judge import _Fail, _close, _inputs


def _attention_problems():
    """(nq, nk, d, M, seed, offset, rise): the README's tiny problem (four blocks), then ragged
    ones; one with its scores near 800 (_inputs), where e^S overflows unless the max is
    subtracted; the last with the scores of K/V block 1 on 1000 above block 0's, where e^(S - m)
    overflows unless the max is updated at every block (the online rescale)."""
    return [(8, 8, 4, 64, 1, 0.0, False), (10, 13, 4, 64, 2, 0.0, False), (7, 5, 8, 128, 3, 0.0, False),
            (9, 11, 4, 64, 12, 800.0, False), (10, 12, 4, 64, 14, 1000.0, True)]


def _attention_problem(problem):
    """An attention puzzle's problem: (nq, nk, d, M, (q, k, v), where it is, for messages)."""
    nq, nk, d, M, seed, offset, rise = problem
    rise_from = -(-M // (4 * d)) if rise else None  # Bc = ceil(M / 4d): the keys of block 1 on
    where = f"Nq = {nq}, Nk = {nk}, d = {d}, M = {M}"
    if offset:
        where += f", scores {offset:g} higher from K/V block 1 on" if rise else f", scores near {offset:g}"
    return nq, nk, d, M, _inputs(nq, nk, d, seed, offset, rise_from), where


_ALG1_HINTS = {
    "l": "Hint: missing rescale? l_i^new = e^(m_i - m_i^new) l_i + e^(m~_ij - m_i^new) l~_ij (Alg1 L11).",
    "m": "Hint: max not carried? m_i^new = max(m_i, m~_ij), with m_i loaded from HBM (Alg1 L8, L11).",
    "O": "Hint: O_i <- diag(l_i^new)^-1 (diag(l_i) e^(m_i - m_i^new) O_i + e^(m~_ij - m_i^new) P~_ij V_j) "
         "(Alg1 L12): the old O_i is rescaled by l_i and e^(m_i - m_i^new), the new block by e^(m~_ij - m_i^new).",
}


_ALG1_BUDGET_HINTS = {
    ("K", "read"): "Hint: load K_j, V_j once per j, outside the loop over i (Alg1 L6)",
    ("V", "read"): "Hint: load K_j, V_j once per j, outside the loop over i (Alg1 L6)",
    ("O", "written"): "Hint: store O_i once per (i, j) (Alg1 L12), l_i and m_i once (L13)",
    ("Q", "read under"): "Hint: Algorithm 1 loads Q_i at every (i, j) (Alg1 L8): Q_i does not stay on chip over j",
    ("O", "read under"): "Hint: Algorithm 1 keeps nothing on chip from one j to the next: it loads O_i, l_i, m_i "
                         "at every (i, j) (Alg1 L8) and writes them back (L12, L13); keeping them on chip is "
                         "FlashAttention-2's order (the fa2-order puzzle)",
    ("O", "written under"): "Hint: Algorithm 1 writes O_i back at every (i, j) (Alg1 L12), and l_i, m_i (L13)",
    ("K", "read under"): "Hint: K_j, V_j are rows j Bc .. min((j + 1) Bc, Nk) (Alg1 L6): a block loaded short "
                         "leaves keys out of every row's softmax",
    ("V", "read under"): "Hint: K_j, V_j are rows j Bc .. min((j + 1) Bc, Nk) (Alg1 L6): a block loaded short "
                         "leaves keys out of every row's softmax",
}


_OVERFLOW_HINT = ("Hint: e^(S - m) overflowed: subtract the running max m_i = max(m_i, rowmax S_ij), updated at "
                  "every K/V block, and rescale l_i and O_i by e^(m_old - m_new) when it grows (FA2fwd L8-L10).")
_FA2_BUDGET_HINTS = {
    ("O", "written"): "Hint: O written every j: keep O_i on chip over the whole j loop and write it once (FA2fwd L14)",
    ("O", "read"): "Hint: FlashAttention-2 never reads O: O_i lives on chip until it is written",
    ("Q", "read"): "Hint: load Q_i once per i, outside the j loop",
    ("K", "read under"): "Hint: load K_j, V_j again for every Q block i: they stream past each Q_i (FA2fwd L6, L7), "
                         "and only a block of them fits on chip",
    ("V", "read under"): "Hint: load K_j, V_j again for every Q block i: they stream past each Q_i (FA2fwd L6, L7), "
                         "and only a block of them fits on chip",
}


def _not_finite_hint(o, lse, lse64, causal):
    """The hint for a FlashAttention-2 output that is not finite where float64's is, or None.
    L_r = -inf is log l_r with l_r = 0: the row summed no key. Every row of the puzzles keeps at
    least one key, so with the causal mask that is a mask that drops the diagonal (c < r + Nk - Nq),
    the common off-by-one, and not an overflow: the rescale hint would send the student to the
    wrong line. inf or nan elsewhere is e^(S - m) overflowing."""
    no_key = np.isneginf(np.asarray(lse, np.float64)) & np.isfinite(lse64)
    if no_key.any():
        r = int(np.argmax(no_key))
        if causal:
            return (f"Hint: L_{r} = -inf: row {r} kept no key (l_{r} = 0), but every row keeps key c when "
                    f"c <= r + (Nk - Nq), its diagonal included: mask with <=, not < (bottom-right aligned).")
        return (f"Hint: L_{r} = -inf: l_{r} = 0, no term e^(S - m) of row {r} was summed (or all underflowed): "
                "l_i = e^(m_old - m_new) l_i + rowsum P~_ij over every K/V block, with m_i the row's own max "
                "(FA2fwd L8, L9).")
    if np.isfinite(o).all() and np.isfinite(lse).all():
        return None
    return _OVERFLOW_HINT


def _scale_hint(got, expected_at, tau, d, line="Alg1 L9"):
    """The hint for values that are those of another scale, or None. A wrong scale in S_ij moves
    every score, so the first store that departs is a max, and "max not carried" or "lse" would
    send the student to the wrong line: got is compared with expected_at(s), the same values at
    the scales students write instead of tau = 1/sqrt(d) (none, 1/d, sqrt(d))."""
    got = np.asarray(got, np.float64)
    scales = (("1 (no scale)", 1.0), (f"1/d = {1 / d:.4g}", 1.0 / d), (f"sqrt(d) = {np.sqrt(d):.4g}", np.sqrt(d)))
    for name, s in scales:
        if not np.isclose(s, tau) and _close(got, expected_at(float(s))).all():
            return (f"Hint: your values are those of the scores S_ij = s Q_i K_j^T with s = {name}, but the scale "
                    f"is tau = 1/sqrt(d) = {tau:.4g} (m.tau): S_ij = tau Q_i K_j^T ({line}).")
    return None


def _check_rows_loaded(machine, causal):
    """Raises _Fail for the first rows of Q, K or V that no load reached. FlashAttention-2 needs
    every row (with the causal mask too: the last query row keeps every key, Nk >= Nq in each
    problem), so rows never loaded are a block the loops left out: most often the short last one
    of a loop bounded by Nq // Br or Nk // Bc in place of m.Tr, m.Tc, or with the mask, blocks
    skipped as if it were aligned top-left. The values alone would blame L_i = m_i + log l_i, or
    O_i's update, for rows whose inputs never reached the chip."""
    core = machine._m
    for tensor, n, size, count, loop in (("Q", core.nq, core.Br, core.Tr, "i over range(m.Tr)"),
                                         ("K", core.nk, core.Bc, core.Tc, "j over range(m.Tc)"),
                                         ("V", core.nk, core.Bc, core.Tc, "j over range(m.Tc)")):
        seen = np.zeros(n, bool)
        for kind, t, r0, r1 in machine._order:
            if kind == "load" and t == tensor:
                seen[r0:r1] = True
        if seen.all():
            continue
        a = int(np.argmin(seen))
        b = a + int(np.argmax(seen[a:])) if seen[a:].any() else n
        what = "O and L of those rows were never computed" if tensor == "Q" else (
            "the last row keeps every key (key c for row r when c <= r + (Nk - Nq), bottom-right aligned)"
            if causal else "every row's softmax needs those keys")
        blocks = f"{count} blocks (block b: rows {size}b to min({size}b + {size}, {n}))"
        if b == n and a == n // size * size and n % size:
            blocks += f"; the last is short (rows {a}:{n}), and a loop to {n} // {size} = {n // size} leaves it out"
        skip = "; skip only the K/V blocks wholly above the diagonal" if causal and tensor != "Q" else ""
        raise _Fail(f"{tensor}[{a}:{b}] was never loaded, and {what}. Hint: loop {loop}: {tensor} is "
                    f"{blocks}{skip}.")


def _lse_in_hbm(core):
    """Algorithm 1's lse = m + log l from the m and l in HBM (-inf or nan where a wrong solution left l <= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return core.peek("m").astype(np.float64) + np.log(core.peek("l").astype(np.float64))


def _block_scale_hint(m_new, m_old, qi, kj, tau):
    """_scale_hint for one (i, j) update of Algorithm 1: m_new against max(m_old, rowmax(s Q_i K_j^T))."""
    unscaled = np.asarray(qi, np.float64) @ np.asarray(kj, np.float64).T
    return _scale_hint(m_new, lambda s: np.maximum(m_old, (s * unscaled).max(axis=1)), tau, qi.shape[1])


_OWN_BLOCK_WHY = ("FlashAttention-2 writes O_i and L_i at the end of their own Q block i (FA2fwd L14, L15), "
                  "before the next Q_i is loaded. Hint: store each block's rows inside the loop over i; "
                  "finished blocks kept on chip until the end need SRAM the tiling does not have.")
