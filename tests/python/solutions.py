"""Solutions to the puzzles, right and wrong, written as a student would: NumPy on the tiles
the machine hands over. Each wrong one makes one of the common mistakes the judge must name."""
import numpy as np


def rows(b, size, n):
    return b * size, min((b + 1) * size, n)


# [SECTION] safe-softmax

def safe_softmax(m):
    m.step("row")
    x = m.load("x", 0, m.n).astype(np.float64)
    e = np.exp(x - x.max())
    m.store("y", 0, m.n, e / e.sum())


def safe_softmax_no_max(m):  # overflows: exp(1000) = inf
    m.step("row")
    x = m.load("x", 0, m.n)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        m.store("y", 0, m.n, e / e.sum())


def safe_softmax_min_ref(m):  # e^(x - min x): right while the row's values are close
    m.step("row")
    x = m.load("x", 0, m.n).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x - x.min())
        m.store("y", 0, m.n, e / e.sum())


def safe_softmax_two_reads(m):  # reads x twice: over the read budget
    m.step("max")
    x = m.load("x", 0, m.n)
    mx = x.max()
    m.free(x)
    m.step("sum")
    x = m.load("x", 0, m.n).astype(np.float64)
    e = np.exp(x - mx)
    m.store("y", 0, m.n, e / e.sum())


def safe_softmax_not_normalised(m):  # e^(x - max) without the division
    m.step("row")
    x = m.load("x", 0, m.n).astype(np.float64)
    m.store("y", 0, m.n, np.exp(x - x.max()))


# [SECTION] online-softmax

def _online(m, merge, store_stats=True):
    mi, li = -np.inf, 0.0
    for b0 in range(0, m.n, m.Bc):
        b1 = min(b0 + m.Bc, m.n)
        m.step(f"block {b0 // m.Bc}")
        with m.sram():
            x = m.load("x", b0, b1).astype(np.float64)
            mt = x.max()
            lt = np.exp(x - mt).sum()
            mi, li = merge(mi, li, mt, lt)
        if store_stats:
            m.store("m", 0, 1, np.array([mi]))
            m.store("l", 0, 1, np.array([li]))
    for b0 in range(0, m.n, m.Bc):
        b1 = min(b0 + m.Bc, m.n)
        m.step("y")
        with m.sram():
            x = m.load("x", b0, b1).astype(np.float64)
            m.store("y", b0, b1, np.exp(x - mi) / li)


def _merge(mi, li, mt, lt):
    mn = max(mi, mt)
    return mn, np.exp(mi - mn) * li + np.exp(mt - mn) * lt


def online_softmax(m):
    _online(m, _merge)


def online_softmax_quiet(m):  # right, without the per-block stores of m and l
    _online(m, _merge, store_stats=False)


def online_softmax_quiet_no_rescale(m):
    _online(m, lambda mi, li, mt, lt: (max(mi, mt), li + lt), store_stats=False)


def online_softmax_quiet_fixed_max(m):  # every sum measured from the first block's max, never updated
    with np.errstate(over="ignore", invalid="ignore"):
        _online(m, lambda mi, li, mt, lt: (mi, li + np.exp(mt - mi) * lt) if np.isfinite(mi) else (mt, lt),
                store_stats=False)


def online_softmax_stores_before_merge(m):  # m, l stored before each block's merge: one block late
    mi, li = -np.inf, 0.0
    for b0 in range(0, m.n, m.Bc):
        b1 = min(b0 + m.Bc, m.n)
        m.step(f"block {b0 // m.Bc}")
        m.store("m", 0, 1, np.array([mi]))
        m.store("l", 0, 1, np.array([li]))
        with m.sram():
            x = m.load("x", b0, b1).astype(np.float64)
            mi, li = _merge(mi, li, x.max(), np.exp(x - x.max()).sum())
    for b0 in range(0, m.n, m.Bc):
        b1 = min(b0 + m.Bc, m.n)
        with m.sram():
            m.store("y", b0, b1, np.exp(m.load("x", b0, b1).astype(np.float64) - mi) / li)


def safe_softmax_view_after_free(m):  # a plain view of the tile used after its block freed it
    m.step("row")
    with m.sram():
        x = np.asarray(m.load("x", 0, m.n))
    e = np.exp(x.astype(np.float64) - x.max())
    m.store("y", 0, m.n, e / e.sum())


def algorithm_1_kv_block_cut(m):  # K_j, V_j loaded one row short (k1 - 1)
    algorithm_1_with()(_ShortBlocks(m))


class _ShortBlocks:
    """The machine whose loads of K and V end one row early."""
    def __init__(self, m):
        self._m_ = m

    def load(self, name, r0, r1, *rest):
        return self._m_.load(name, r0, r1 - 1 if name in ("K", "V") else r1, *rest)

    def note(self, **values):  # the noted tiles are a column short: not shown
        pass

    def __getattr__(self, name):
        return getattr(self._m_, name)


def algorithm_1_last_j_left_out(m):
    algorithm_1_with()(_FewerBlocks(m))


class _FewerBlocks:
    """The machine with Tc one less: the student's loops leave the last K/V block out."""
    def __init__(self, m):
        self._m_ = m

    def __getattr__(self, name):
        return self._m_.Tc - 1 if name == "Tc" else getattr(self._m_, name)


def online_softmax_no_rescale(m):
    _online(m, lambda mi, li, mt, lt: (max(mi, mt), li + lt))


def online_softmax_max_not_carried(m):
    _online(m, lambda mi, li, mt, lt: (mt, np.exp(mi - mt) * li + lt if np.isfinite(mi) else lt))


def online_softmax_whole_row(m):  # the row does not fit in SRAM
    m.step("row")
    x = m.load("x", 0, m.n).astype(np.float64)
    e = np.exp(x - x.max())
    m.store("y", 0, m.n, e / e.sum())


# [SECTION] Algorithm 1 and its block update

def alg1_update(Qi, Kj, Vj, Oi, li, mi, tau, rescale=True, carry_max=True, rescale_o=True, m=None, ij=None,
                keep_alpha=True):
    """Alg1 L9-L12 on one (i, j): returns O_i, l_i, m_i after the update (float64); with the
    machine m, steps through L9, L10, L11 at ij = (i, j), noting their on-chip values."""
    S = tau * Qi.astype(np.float64) @ Kj.T.astype(np.float64)           # L9
    mt = S.max(axis=1)                                                    # L10
    P = np.exp(S - mt[:, None])
    lt = P.sum(axis=1)
    mn = np.maximum(mi, mt) if carry_max else mt                          # L11
    a, b = np.exp(mi - mn), np.exp(mt - mn)
    ln = (a * li if keep_alpha else li) + b * lt if rescale else li + lt
    if rescale_o:                                                         # L12
        On = ((li * a)[:, None] * Oi + b[:, None] * (P @ Vj)) / ln[:, None]
    else:
        On = (li[:, None] * Oi + P @ Vj) / ln[:, None]
    if m is not None:
        m.step("Alg1 L9", *ij)
        m.note(S=S)
        m.step("Alg1 L10", *ij)
        m.note(P=P, m_tilde=mt, l_tilde=lt)
        m.step("Alg1 L11", *ij)
        m.note(m_old=mi, l_old=li, m_new=mn, l_new=ln, alpha=a, beta=b)
    return On, ln, mn


def block_update_with(store_m=True, **mistakes):
    def fn(m):
        q0, q1 = rows(m.i, m.Br, m.nq)
        k0, k1 = rows(m.j, m.Bc, m.nk)
        m.step("Alg1 L8", i=m.i, j=m.j)
        Qi, Kj, Vj = m.load("Q", q0, q1), m.load("K", k0, k1), m.load("V", k0, k1)
        Oi, li, mi = m.load("O", q0, q1), m.load("l", q0, q1), m.load("m", q0, q1)
        On, ln, mn = alg1_update(Qi, Kj, Vj, Oi, li, mi, m.tau, **mistakes)
        m.step("Alg1 L12", i=m.i, j=m.j)
        m.store("O", q0, q1, On)
        m.step("Alg1 L13", i=m.i, j=m.j)
        m.store("l", q0, q1, ln)
        if store_m:
            m.store("m", q0, q1, mn)
    return fn


def block_update_reading_twice(m):  # loads K_j twice
    k0, k1 = rows(m.j, m.Bc, m.nk)
    m.free(m.load("K", k0, k1))
    block_update_with()(m)


def algorithm_1_with(loop_swapped=False, kv_used_after_block=False, q_kept_o_loaded=False, state_in_python=False,
                     in_pieces=False, **mistakes):
    """Algorithm 1, or with a mistake: kv_used_after_block, K_j and V_j used after the `with` block
    that loaded them; q_kept_o_loaded, Q_i kept from j = 0 as a plain copy and O_i loaded a second
    time in its place (Algorithm 1's total bytes, from the wrong tensors); state_in_python,
    O_i, l_i, m_i loaded at every (i, j) but the update made from the ones kept in Python since
    the last j (Algorithm 1's bytes, stores and result: only the data flow differs). in_pieces:
    right, with O_i loaded and stored by row halves and column halves, l_i and m_i by row halves."""
    kept = {}

    def load_state(m, q0, q1):
        if not in_pieces:
            return m.load("O", q0, q1), m.load("l", q0, q1), m.load("m", q0, q1)
        h, c = (q0 + q1 + 1) // 2, m.d // 2
        halves = [(a, b) for a, b in ((q0, h), (h, q1)) if b > a]
        Oi = np.vstack([np.hstack([m.load("O", a, b, 0, c), m.load("O", a, b, c)]) for a, b in halves])
        return (Oi, np.concatenate([m.load("l", a, b) for a, b in halves]),
                np.concatenate([m.load("m", a, b) for a, b in halves]))

    def store_o(m, q0, q1, On):
        if not in_pieces:
            return m.store("O", q0, q1, On)
        c = m.d // 2
        m.store("O", q0, q1, On[:, :c])
        m.store("O", q0, q1, On[:, c:], c0=c)

    def fn(m):
        def update(i, j, Kj, Vj):
            q0, q1 = rows(i, m.Br, m.nq)
            m.step("Alg1 L8", i=i, j=j)
            with m.sram():
                if q_kept_o_loaded:
                    if j == 0:
                        kept[i] = np.array(m.load("Q", q0, q1))
                    else:
                        m.load("O", q0, q1)
                    Qi, Oi = kept[i], m.load("O", q0, q1)
                    li, mi = m.load("l", q0, q1), m.load("m", q0, q1)
                else:
                    Qi = m.load("Q", q0, q1)
                    Oi, li, mi = load_state(m, q0, q1)
                if state_in_python and j > 0:
                    Oi, li, mi = kept[i]
                On, ln, mn = alg1_update(Qi, Kj, Vj, Oi, li, mi, m.tau, m=m, ij=(i, j), **mistakes)
                if state_in_python:
                    kept[i] = (On, ln, mn)
                m.step("Alg1 L12", i=i, j=j)
                store_o(m, q0, q1, On)
                m.step("Alg1 L13", i=i, j=j)
                m.store("l", q0, q1, ln)
                m.store("m", q0, q1, mn)
        if loop_swapped:  # i outside: K_j, V_j loaded Tr times
            for i in range(m.Tr):
                for j in range(m.Tc):
                    k0, k1 = rows(j, m.Bc, m.nk)
                    m.step("Alg1 L6", j=j)
                    with m.sram():
                        Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                        update(i, j, Kj, Vj)
            return
        for j in range(m.Tc):
            k0, k1 = rows(j, m.Bc, m.nk)
            m.step("Alg1 L6", j=j)
            with m.sram():
                Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                for i in range(0 if kv_used_after_block else m.Tr):
                    update(i, j, Kj, Vj)
            for i in range(m.Tr if kv_used_after_block else 0):
                update(i, j, Kj, Vj)
    return fn


def alg1_loads(m, i, j):
    """Alg1 L8 at (i, j): Q_i, O_i, l_i, m_i loaded (inside the caller's `with m.sram():`)."""
    q0, q1 = rows(i, m.Br, m.nq)
    m.step("Alg1 L8", i=i, j=j)
    return q0, q1, m.load("Q", q0, q1), m.load("O", q0, q1), m.load("l", q0, q1), m.load("m", q0, q1)


def algorithm_1_off_chip(per_j_store=False):
    """Algorithm 1's bytes, not its HBM: O_i, l_i, m_i kept in Python over j while zeros are
    written at every j but the last (O_i, l_i, m_i still loaded); with per_j_store, the right
    values written for all rows in one store per j, after the loop over i."""
    def fn(m):
        state = {}
        for j in range(m.Tc):
            k0, k1 = rows(j, m.Bc, m.nk)
            m.step("Alg1 L6", j=j)
            with m.sram():
                Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                out = []
                for i in range(m.Tr):
                    with m.sram():
                        q0, q1, Qi, Oi, li, mi = alg1_loads(m, i, j)
                        if not per_j_store:
                            Oi, li, mi = state.get(i, (Oi, li, mi))
                        On, ln, mn = alg1_update(Qi, Kj, Vj, Oi, li, mi, m.tau)
                    state[i] = (On, ln, mn)
                    last = j == m.Tc - 1
                    if per_j_store:
                        out.append((On, ln, mn))
                        continue
                    m.step("Alg1 L12", i=i, j=j)
                    m.store("O", q0, q1, On if last else np.zeros_like(On))
                    m.step("Alg1 L13", i=i, j=j)
                    m.store("l", q0, q1, ln if last else np.zeros_like(ln))
                    m.store("m", q0, q1, mn if last else np.zeros_like(mn))
                if per_j_store:
                    m.step("Alg1 L12", j=j)
                    m.store("O", 0, m.nq, np.vstack([o for o, _, _ in out]))
                    m.step("Alg1 L13", j=j)
                    m.store("l", 0, m.nq, np.concatenate([lv for _, lv, _ in out]))
                    m.store("m", 0, m.nq, np.concatenate([mv for _, _, mv in out]))
    return fn


def fa2_q_in_halves(m):
    """FlashAttention-2 with each Q_i loaded as two half tiles (the same bytes): right."""
    for i in range(m.Tr):
        q0, q1 = rows(i, m.Br, m.nq)
        halves = [(q0, (q0 + q1) // 2), ((q0 + q1) // 2, q1)] if q1 - q0 > 1 else [(q0, q1)]
        m.step("FA2fwd L4", i=i)
        tiles = [m.load("Q", a, b) for a, b in halves]
        Qi = np.vstack(tiles).astype(np.float64)
        Oi, li, mi = np.zeros((q1 - q0, m.d)), np.zeros(q1 - q0), np.full(q1 - q0, -np.inf)
        for j in range(m.Tc):
            k0, k1 = rows(j, m.Bc, m.nk)
            m.step("FA2fwd L7", i=i, j=j)
            with m.sram():
                Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                S = m.tau * Qi @ Kj.T.astype(np.float64)
                mn = np.maximum(mi, S.max(axis=1))
                P, a = np.exp(S - mn[:, None]), np.exp(mi - mn)
                li, Oi, mi = a * li + P.sum(axis=1), a[:, None] * Oi + P @ Vj, mn
        m.step("FA2fwd L14", i=i)
        m.store("O", q0, q1, Oi / li[:, None])
        m.step("FA2fwd L15", i=i)
        m.store("L", q0, q1, mi + np.log(li))
        for t in tiles:
            m.free(t)


def algorithm_1_whole_kv(m):  # K and V loaded whole: more than SRAM holds
    K, V = m.load("K", 0, m.nk), m.load("V", 0, m.nk)
    for j in range(m.Tc):
        k0, k1 = rows(j, m.Bc, m.nk)
        for i in range(m.Tr):
            with m.sram():
                q0, q1, Qi, Oi, li, mi = alg1_loads(m, i, j)
                On, ln, mn = alg1_update(Qi, K[k0:k1], V[k0:k1], Oi, li, mi, m.tau)
                m.store("O", q0, q1, On)
                m.store("l", q0, q1, ln)
                m.store("m", q0, q1, mn)


# [SECTION] FlashAttention-2's order, causal

def fa2_with(o_every_j=False, save_lse=True, normalise=True, causal=False, skip=True, align_top_left=False,
             free_q=True, store_at_end=False, rescale=True, drop_diagonal=False, sum_l=True):
    """FlashAttention-2, or with a mistake; drop_diagonal: the causal mask keeps c < r + Nk - Nq
    (the off-by-one that leaves row 0 of a square problem no key); sum_l: False never adds the
    block's rowsum P~ to l_i."""
    def fn(m):
        offset = 0 if align_top_left else m.nk - m.nq
        finished = []  # store_at_end: every block's O_i and L_i kept in Python, written after the loop
        for i in range(m.Tr):
            q0, q1 = rows(i, m.Br, m.nq)
            m.step("FA2fwd L4", i=i)
            Qt = m.load("Q", q0, q1)
            Qi = Qt.astype(np.float64)
            Oi = np.zeros((q1 - q0, m.d))
            li = np.zeros(q1 - q0)
            mi = np.full(q1 - q0, -np.inf)
            for j in range(m.Tc):
                k0, k1 = rows(j, m.Bc, m.nk)
                if causal and skip and k0 > q1 - 1 + offset:  # every key of the block is masked
                    continue
                m.step("FA2fwd L7", i=i, j=j)
                with m.sram():
                    Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                    S = m.tau * Qi @ Kj.T.astype(np.float64)
                    if causal:
                        r = np.arange(q0, q1)[:, None]
                        c = np.arange(k0, k1)[None, :]
                        S = np.where(c < r + offset if drop_diagonal else c <= r + offset, S, -np.inf)
                    # without the rescale: the max of the first block that has one, never updated
                    mn = np.maximum(mi, S.max(axis=1)) if rescale else np.where(np.isfinite(mi), mi, S.max(axis=1))
                    safe = np.where(np.isfinite(mn), mn, 0.0)
                    with np.errstate(over="ignore", invalid="ignore"):
                        P = np.exp(S - safe[:, None])
                        a = np.exp(np.where(np.isfinite(mi), mi - safe, -np.inf))
                        li = a * li + (P.sum(axis=1) if sum_l else 0.0)
                        Oi = a[:, None] * Oi + P @ Vj
                    mi = mn
                if o_every_j:
                    m.step("FA2fwd L14", i=i)
                    m.store("O", q0, q1, Oi / li[:, None])
            m.step("FA2fwd L12", i=i)
            with np.errstate(invalid="ignore", divide="ignore"):  # l_i = 0 in a wrong solution: nan, -inf
                On = Oi / li[:, None] if normalise else Oi
                Li = mi + np.log(li)
            if store_at_end:
                finished.append((On, Li))
            else:
                m.step("FA2fwd L14", i=i)
                m.store("O", q0, q1, On)
            if save_lse and not store_at_end:
                m.step("FA2fwd L15", i=i)
                m.store("L", q0, q1, Li)
            if free_q:
                m.free(Qt)
        if store_at_end:
            m.step("FA2fwd L14", i=m.Tr - 1)
            m.store("O", 0, m.nq, np.vstack([o for o, _ in finished]))
            m.store("L", 0, m.nq, np.concatenate([lse for _, lse in finished]))
    return fn


# [SECTION] backward-block

def backward_block_with(use_D=True, subtract_L=True, tau_in_dk=True, reload_kv=False, d_from_o=False,
                        hold_q=False):
    """FA2's backward for one K/V block, or with a mistake; hold_q: every Q_i and dO_i kept in
    SRAM (never freed)."""
    held = []

    def fn(m):
        j = m.j
        k0, k1 = rows(j, m.Bc, m.nk)
        m.step("FA2b L6", j=j)
        Kj, Vj = m.load("K", k0, k1).astype(np.float64), m.load("V", k0, k1).astype(np.float64)
        dKj, dVj = np.zeros((k1 - k0, m.d)), np.zeros((k1 - k0, m.d))
        for i in range(m.Tr):
            q0, q1 = rows(i, m.Br, m.nq)
            m.step("FA2b L9", i=i, j=j)
            if hold_q:  # loaded outside any `with m.sram():` and never freed: they stay charged
                held.append((m.load("Q", q0, q1), m.load("dO", q0, q1)))
            with m.sram():
                if reload_kv:
                    m.load("K", k0, k1), m.load("V", k0, k1)
                Qi, dOi = m.load("Q", q0, q1).astype(np.float64), m.load("dO", q0, q1).astype(np.float64)
                Li = m.load("L", q0, q1).astype(np.float64)
                if d_from_o:  # D_i recomputed from O_i: Br d floats read where D_i is Br
                    Di = (dOi * m.load("O", q0, q1)).sum(axis=1)
                else:
                    Di = m.load("D", q0, q1).astype(np.float64)
                if not use_D:
                    Di = np.zeros(q1 - q0)
                m.note(D=Di)
                # each line's on-chip result noted at its line, for the app's backward view
                m.step("FA2b L10", i=i, j=j)
                S = m.tau * Qi @ Kj.T
                m.note(S=S)
                m.step("FA2b L11", i=i, j=j)
                P = np.exp(S - Li[:, None]) if subtract_L else np.exp(S)
                m.note(P=P)
                m.step("FA2b L12", i=i, j=j)
                dVj += P.T @ dOi
                m.note(dV=dVj)
                m.step("FA2b L13", i=i, j=j)
                dP = dOi @ Vj.T
                m.note(dP=dP)
                m.step("FA2b L14", i=i, j=j)
                dS = P * (dP - Di[:, None])
                m.note(dS=dS)
                m.step("FA2b L16", i=i, j=j)
                dKj += (m.tau if tau_in_dk else 1.0) * dS.T @ Qi
                m.note(dK=dKj)
        m.step("FA2b L18", j=j)
        m.store("dK", k0, k1, dKj)
        m.store("dV", k0, k1, dVj)
    return fn


# [SECTION] decode-combine

def decode_combine_with(mode="right"):
    def fn(m):
        done = []
        for i in range(m.Tr):
            q0, q1 = rows(i, m.Br, m.nq)
            m.step("FD L17", i=i)
            lse = np.stack([m.load("Lp", s * m.nq + q0, s * m.nq + q1) for s in range(m.S)]).astype(np.float64)
            if mode == "inf_as_zero":  # a split that saw no key treated as lse = 0
                lse = np.where(np.isinf(lse), 0.0, lse)
            mx = lse[0] if mode == "first_split_max" else lse.max(axis=0)  # the first split's lse as the max
            with np.errstate(invalid="ignore", over="ignore"):
                Li = mx + np.log(np.exp(lse - mx).sum(axis=0))
            m.step("FD L18", i=i)
            Oi = np.zeros((q1 - q0, m.d))
            for s in range(m.S):
                Os = m.load("Op", s * m.nq + q0, s * m.nq + q1)
                with np.errstate(invalid="ignore"):
                    w = 1.0 / m.S if mode == "average" else np.exp(lse[s] - Li)
                Oi += (w if np.ndim(w) == 0 else w[:, None]) * Os.astype(np.float64)
                m.free(Os)
            if mode == "store_at_end":  # every block kept in Python, O and L written once after the loop
                done.append((Oi, Li))
                continue
            m.step("FD L19", i=i)
            m.store("O", q0, q1, Oi)
            if mode != "no_lse":
                m.step("FD L20", i=i)
                m.store("L", q0, q1, Li)
        if done:
            m.step("FD L19", i=m.Tr - 1)
            m.store("O", 0, m.nq, np.vstack([o for o, _ in done]))
            m.step("FD L20", i=m.Tr - 1)
            m.store("L", 0, m.nq, np.concatenate([lv for _, lv in done]))
    return fn


# [SECTION] the same solutions, their steps labelled otherwise

class Relabelled:
    """The machine, with each m.step's label mapped by `label` and its i=, j= left out (docs/python.md:
    "i, j default to the blocks loaded")."""

    def __init__(self, m, label=lambda s: s):
        self._machine, self._label = m, label

    def __getattr__(self, name):
        return getattr(self._machine, name)

    def step(self, label, i=None, j=None):
        self._machine.step(self._label(label))


def relabelled(fn, label=lambda s: s):
    return lambda m: fn(Relabelled(m, label))
