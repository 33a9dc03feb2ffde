"""flashstep.puzzles: write the schedule yourself; the simulator judges its result, its bytes
and its SRAM.

    from flashstep import puzzles
    puzzles.list()                       # the ids, in the order of the textbook chapter
    puzzles.show("algorithm-1")          # the statement and a starter
    r = puzzles.check("algorithm-1", my_fn)
    r.passed, r.message, r.read_bytes, r.budget_read, r.peak_sram, r.trace.save("t.json")

Your function gets a simulated machine `m` for one problem: m.nq, m.nk, m.d, m.M, m.Br, m.Bc,
m.tau (and per puzzle m.n, m.i, m.j, m.S), read-only. Data moves only through
    tile = m.load(name, r0, r1, c0=0, c1=None)   # HBM -> SRAM, a NumPy copy, bytes counted
    m.store(name, r0, r1, tile, c0=0)            # SRAM -> HBM, bytes counted
    m.free(tile)                                 # or: with m.sram(): ... frees what it loaded;
                                                 # nothing else frees a tile
    m.step("Alg1 L9", i=None, j=None)            # names the pseudocode line of what follows
    m.note(S=Sij, m_new=mi_new, l_new=li_new)    # optional: on-chip values, for the app
Vectors (l, m, L, D, x, y, Lp) load and store as 1-D arrays. The d-wide tiles (and x, y) held at
once must fit in M float32 words; the row statistics are on-chip scratch, as in core's count
(docs/algorithm.md). What you compute from tiles with NumPy stays on chip and costs nothing. A
freed tile has left the chip: using it (or a view or .copy()/.astype() of it) stops your function
with its name; load it again where the algorithm does. One store writes at most M elements.

The machine is core's memory model (python/student_machine.h): the same Hbm and Sram code
counts your bytes and the built-in schedules'. The judge compares your outputs with core's
float64 reference within the puzzle's tolerance, your bytes with the schedule's own, exactly
(core/closed_form.h) and tensor by tensor (a tile copied out of SRAM and reused from Python
shows as bytes under it) and, on a wrong result, your stored state with the reference schedule's trace, naming the first
of your steps that departs from it. While your function runs, HBM is reached only through
m.load and m.store.
"""
import builtins
import textwrap

import numpy as np

from . import _core
from ._attention import _ALG1_BUDGET_HINTS, _ALG1_HINTS, _FA2_BUDGET_HINTS, _OWN_BLOCK_WHY, _attention_problem, \
    _attention_problems, _block_scale_hint, _check_rows_loaded, _lse_in_hbm, _not_finite_hint, _scale_hint
from ._reload import check_loads_used
from ._judge import (  # noqa: F401 (Machine, CheckResult, ATOL, RTOL are part of this module's API)
    ATOL,
    RTOL,
    Machine,
    StudentTrace,
    CheckResult,
    _Fail,
    _fmt,
    _close,
    _first_bad,
    _where,
    _elem_name,
    _check_output,
    _check_budget,
    _check_written_in_own_block,
    _Puzzle,
    _core_machine,
    _run_student,
    _inputs,
    _replay,
    _departure,
    _writes_table,
    _wrong_element,
)


# [SECTION] the puzzles

class SafeSoftmax(_Puzzle):
    id = "safe-softmax"
    title = "Safe softmax of one row"
    statement = """\
    HBM holds x, one row of N scores (some of them near 1000), and room for y. Write
    y = softmax(x) = e^(x - max x) / sum e^(x - max x). exp(1000) overflows float32: subtract
    the max first (one row spans 0 to 2000: only the max keeps every e^(x - r) finite). The
    row fits in SRAM (N <= M): read x once and write y once.
    Budget: N floats read, N written. Tolerance: 1e-4 abs + 1e-4 rel against float64."""
    starter = '''\
    def safe_softmax(m):
        m.step("row")
        x = m.load("x", 0, m.n)      # the whole row (1-D)
        y = x                        # replace: y = softmax(x)
        m.store("y", 0, m.n, y)
    '''

    def problems(self):
        rng = np.random.default_rng(7)
        # the last spans 2000: e^(x - r) overflows for any reference r but the max (the min, the mean, x[0])
        return [rng.normal(1000.0, 3.0, 50), rng.normal(0.0, 5.0, 13), np.array([1.0, 2.0, 3.0, 4.0]),
                np.concatenate([rng.normal(0.0, 3.0, 12), rng.normal(2000.0, 3.0, 4)])]

    def judge(self, fn, x):
        n = x.size
        core = _core_machine(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), M=64, capacity=max(n, 4),
                             inputs=False)
        core.put("x", x.astype(np.float32))
        core.put("y", np.zeros(n, np.float32))
        core.set_row_block(n)  # one block: the app shows the lesson's one merge beside yours
        m = Machine(core, n=n, M=max(n, 4))  # the row fits: M = N
        budget = (4 * n, 4 * n)
        try:
            _run_student(fn, m)
            expected = _core.lesson_softmax(x.astype(np.float32).astype(np.float64), n).direct
            if not any(st.tensor == "y" for s in core.steps for st in s.stores):
                raise _Fail("y was never written. Hint: store y = e^(x - max x) / sum e^(x - max x) with "
                            "m.store(\"y\", 0, m.n, y).")
            try:
                _check_output(m, "y", expected, "the float64 softmax")
            except _Fail as f:
                got = core.peek("y")
                # a tile freed before y was stored: its memory reads nan (a view of it kept past its block)
                kinds = [e[0] for e in m._order]
                freed_first = "free" in kinds and "store" in kinds and kinds.index("free") < kinds.index("store")
                hint = ("Hint: e^x overflowed float32 (inf / inf = nan): subtract max(x) before exp."
                        if not np.all(np.isfinite(got)) and np.abs(x).max() > 80 and not freed_first else
                        "Hint: y holds nan: a tile's memory reads nan once it has left SRAM, and x left it before "
                        "y was stored (a view such as np.asarray(tile) kept past its block?)."
                        if not np.all(np.isfinite(got)) else
                        "Hint: y must sum to 1: divide e^(x - m) by l = sum e^(x - m)."
                        if abs(float(np.sum(got)) - 1.0) > 1e-3 else
                        "Hint: subtract the row's max, then exponentiate, then divide by the sum.")
                raise _Fail(f"{f}. {hint}") from None
            _check_budget(m, budget, {"x": (4 * n, 0), "y": (0, 4 * n)}, "a one-pass safe softmax")
        except _Fail as f:
            return CheckResult(False, str(f), m, budget, f"N = {n}")
        return CheckResult(True, "", m, budget, f"N = {n}")


class OnlineSoftmax(_Puzzle):
    id = "online-softmax"
    title = "Online softmax, a row in blocks"
    statement = """\
    HBM holds x, a row of N numbers, longer than SRAM: only one block of m.Bc numbers fits
    (M = Bc). Pass 1: for each block, its local max m~ and sum l~ = sum e^(x - m~), merged
    into the running statistics m_new = max(m, m~), l_new = e^(m - m_new) l + e^(m~ - m_new) l~;
    after each block store them (m.store("m", 0, 1, m_new), m.store("l", 0, 1, l_new)), so that
    a wrong answer is traced to the block where your state leaves the lesson's (without these
    stores only y is judged). Pass 2: y = e^(x - m) / l, block by block.
    The first problem is the lesson's [1, 2, 3, 4] in blocks of 2 (flashstep lesson softmax);
    one has values near 1000, where e^x overflows even in float64, and the last jumps by 2000
    after its first block, where a max not carried from block to block overflows too.
    Budget, exact: 2N floats read (x twice), N written (y); the stores of m and l are
    diagnostics, not counted."""
    starter = '''\
    import numpy as np

    def online_softmax(m):
        mi, li = -np.inf, 0.0
        for b0 in range(0, m.n, m.Bc):
            b1 = min(b0 + m.Bc, m.n)
            m.step(f"block {b0 // m.Bc}")
            with m.sram():
                x = m.load("x", b0, b1)
                # m~, l~ of the block; merge into mi, li
            m.store("m", 0, 1, np.array([mi]))
            m.store("l", 0, 1, np.array([li]))
        # pass 2: y = e^(x - mi) / li, block by block
    '''

    def problems(self):
        rng = np.random.default_rng(11)
        # the last: a max that grows by 2000 after the first block overflows unless every sum is
        # rescaled to the new max
        return [(np.array([1.0, 2.0, 3.0, 4.0]), 2, ""), (rng.normal(0.0, 3.0, 37), 8, ""),
                (rng.normal(1000.0, 3.0, 24), 8, ""),
                (np.concatenate([rng.normal(0.0, 3.0, 8), rng.normal(2000.0, 3.0, 8), rng.normal(1000.0, 3.0, 8)]), 8,
                 ", values 2000 higher in block 1")]

    def judge(self, fn, problem):
        x, block, note = problem
        n = x.size
        core = _core_machine(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), M=64, capacity=block, inputs=False)
        core.put("x", x.astype(np.float32))
        core.put("y", np.zeros(n, np.float32))
        core.put("m", np.array([-np.inf], np.float32))
        core.put("l", np.zeros(1, np.float32))
        core.set_row_block(block)
        m = Machine(core, n=n, Bc=block, M=block)
        diagnostics = ("m", "l")  # shown in the trace and used to name the departing block, not judged
        budget = (4 * 2 * n, 4 * n)
        lesson = _core.lesson_softmax(x.astype(np.float32).astype(np.float64), block)
        where = f"N = {n}, blocks of {block}{note}"
        try:
            _run_student(fn, m)
            self._departure(m, lesson)
            if not any(st.tensor == "y" for s in core.steps for st in s.stores):
                raise _Fail("y was never written. Hint: pass 2 stores y = e^(x - m) / l block by block, with the "
                            "final m and l of pass 1.")
            try:
                _check_output(m, "y", lesson.direct, "the float64 softmax")
            except _Fail as f:
                raise _Fail(f"{f}. Hint: merge each block as m_new = max(m, m~), l_new = e^(m - m_new) l + "
                            "e^(m~ - m_new) l~, then y = e^(x - m) / l with the final m and l (store m and l "
                            "after each block to see where yours depart).") from None
            _check_budget(m, budget, {"x": (8 * n, 0), "y": (0, 4 * n)}, "the two-pass online softmax",
                          {("x", "read"): "Hint: read x twice, block by block: once for m and l, once for y",
                           ("x", "read under"): "Hint: pass 2 loads x again, block by block: only one block "
                                                "fits in SRAM"}, diagnostics)
        except _Fail as f:
            msg = str(f)
            if "SRAM full" in msg:
                msg += " Hint: only one block fits; load x block by block (m.Bc numbers)."
            return CheckResult(False, msg, m, budget, where, diagnostics)
        return CheckResult(True, "", m, budget, where, diagnostics)

    @staticmethod
    def _departure(m, lesson):
        stores = {"m": [], "l": []}
        for step in m._m.steps:
            for st in step.stores:
                if st.tensor in stores:
                    stores[st.tensor].append((step, float(st.data[0])))
        blocks = lesson.blocks
        if len(stores["m"]) != len(blocks) or len(stores["l"]) != len(blocks):
            return  # not stored after every block: the judge has only y to go by
        for b, blk in enumerate(blocks):
            mine_m, mine_l = stores["m"][b][1], stores["l"][b][1]
            where = f"after your block {b} (x[{blk.begin}:{blk.end}])"
            if not _close(mine_m, blk.m_new):
                hint = ("Hint: the max is not carried: m_new = max(m, m~), the running max over all blocks so far."
                        if _close(mine_m, blk.local_max) else
                        "Hint: your m and l are the ones before this block's merge: store m_new, l_new after "
                        "merging the block." if _close(mine_m, blk.m_old) and _close(mine_l, blk.l_old) else
                        "Hint: m_new = max(m, m~).")
                raise _Fail(f"{where}, m = {_fmt(mine_m)} but the lesson has {_fmt(blk.m_new)}. {hint}")
            if not _close(mine_l, blk.l_new):
                naive = blk.l_old + blk.local_sum
                hint = ("Hint: missing rescale: l_new = e^(m - m_new) l + e^(m~ - m_new) l~, both sums "
                        "measured from the new max." if _close(mine_l, naive) or b > 0 else
                        "Hint: l~ = sum e^(x - m~) over the block.")
                raise _Fail(f"{where}, l = {_fmt(mine_l)} but the lesson has {_fmt(blk.l_new)}. {hint}")


class Algorithm1(_Puzzle):
    id = "algorithm-1"
    title = "Algorithm 1, the whole forward pass"
    statement = """\
    HBM holds Q (Nq x d), K, V (Nk x d) and O = 0, l = 0, m = -inf as Algorithm 1's line 2
    leaves them. Write Algorithm 1 (Dao et al. 2022): for each K/V block j (Bc rows), for each
    Q block i (Br rows): load Q_i, O_i, l_i, m_i; S_ij = tau Q_i K_j^T; m~, P~ = e^(S - m~), l~;
    merge m_i^new, l_i^new; O_i <- diag(l_new)^-1 (diag(l) e^(m - m_new) O_i + e^(m~ - m_new) P~ V_j);
    store O_i, l_i, m_i. Label your steps with Algorithm 1's lines (m.step("Alg1 L8"), ...)
    so that the app shows your trace beside the paper's. Budget, exact: Algorithm 1's closed form
    less line 2 (reads 2 Nk d + Tc Nq (2d + 2), writes Tc Nq (d + 2) floats); tiles within M.
    One problem's scores are near 800, where e^S overflows unless the max is subtracted; in the
    last the scores jump by 1000 after K/V block 0. Every store of O, l, m is judged against
    Algorithm 1's write at that (i, j); the final O and lse = m + log l against float64
    (1e-4 abs + 1e-4 rel), and l, m against Algorithm 1's (m_i the row's max: any other
    reference point is not Algorithm 1). Then a second run hands back another valid state at
    every reload of O_i, l_i, m_i (j >= 1): your update must use what it loads."""
    starter = '''\
    import numpy as np

    def algorithm_1(m):
        for j in range(m.Tc):
            k0, k1 = j * m.Bc, min((j + 1) * m.Bc, m.nk)
            m.step("Alg1 L6", j=j)
            Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
            for i in range(m.Tr):
                q0, q1 = i * m.Br, min((i + 1) * m.Br, m.nq)
                m.step("Alg1 L8", i=i, j=j)
                with m.sram():
                    Qi, Oi = m.load("Q", q0, q1), m.load("O", q0, q1)
                    li, mi = m.load("l", q0, q1), m.load("m", q0, q1)
                    # Alg1 L9-L11: S_ij, m~_ij, P~_ij, l~_ij, m_i^new, l_i^new
                    # m.step("Alg1 L12", i=i, j=j); m.store("O", q0, q1, ...)
                    # m.step("Alg1 L13", i=i, j=j); m.store("l", ...); m.store("m", ...)
            m.free(Kj); m.free(Vj)
    '''
    schedule = "fa1"
    algorithm = "Algorithm 1"

    def problems(self):
        return _attention_problems()

    def _machine(self, problem):
        nq, nk, d, M, (q, k, v), _ = _attention_problem(problem)
        core = _core_machine(q, k, v, M=M)
        core.put("O", np.zeros((nq, d), np.float32))
        core.put("l", np.zeros(nq, np.float32))
        core.put("m", np.full(nq, -np.inf, np.float32))
        return Machine(core), (q, k, v)

    def judge(self, fn, problem):
        nq, nk, d, M, _, where = _attention_problem(problem)
        m, (q, k, v) = self._machine(problem)
        ref = _core.run(q, k, v, schedule=self.schedule, M=M)
        # The closed form less line 2's O = 0, l = 0, m = -inf (Nq (d + 2) floats), which the
        # puzzle has written: the budget is what the student's loops move, exactly.
        init = {"O": 4 * nq * d, "l": 4 * nq, "m": 4 * nq}
        cf = ref.closed_form_read_bytes, ref.closed_form_write_bytes - sum(init.values())
        per_tensor = {t: (r, w - init.get(t, 0)) for t, (r, w) in ref.tensor_bytes.items()}
        try:
            _run_student(fn, m)
            stored = {st.tensor for s in m._m.steps for st in s.stores}
            for tensor in ("O", "l", "m"):
                if tensor not in stored:
                    raise _Fail(f"{tensor} was never written. Hint: store O_i (Alg1 L12), then l_i and m_i "
                                "(Alg1 L13), for every (i, j).")
            o64, lse64 = _core.reference_attention(q, k, v, m.tau)
            # K or V loaded short (a load ending inside a block, fewer bytes than the schedule's)
            # makes the values wrong too: the bytes say why, before the values do
            cut = any(kind == "load" and t in ("K", "V") and r1 != min((r0 // m.Bc + 1) * m.Bc, nk)
                      for kind, t, r0, r1 in m._order)
            if cut and any(m._m.tensor_read(t) < per_tensor[t][0] for t in ("K", "V")):
                _check_budget(m, cf, per_tensor, self.algorithm, _ALG1_BUDGET_HINTS)
            # Every store, not only the last: O_i, l_i, m_i kept in Python over j and something else
            # written at the earlier j end with Algorithm 1's final HBM, and its bytes.
            table = _writes_table(ref)  # core's writes, built once for both departures below
            scaled = _scale_hint(_lse_in_hbm(m._m), lambda s: _core.reference_attention(q, k, v, s)[1], m.tau, d)
            hints = (lambda t: scaled) if scaled else (lambda t: _ALG1_HINTS.get(t, ""))
            dep = _departure(m, table, self.algorithm, hints, exact_j=True)
            if dep:
                raise _Fail(dep)
            try:
                _check_output(m, "O", o64, "the float64 reference")
                lse = m._m.peek("m").astype(np.float64) + np.log(m._m.peek("l").astype(np.float64))
                idx = _first_bad(lse, lse64)
                if idx is not None:
                    raise _Fail(f"lse_{idx[0]} = m + log l = {_fmt(lse[idx])} but the float64 reference has "
                                f"{_fmt(lse64[idx])}")
                # Algorithm 1 leaves m_i = the row's max and l_i = sum e^(s - m_i) in HBM
                final = _replay([w for s in ref.steps for w in s.writes], {"l": (nq, 1), "m": (nq, 1)})
                for tensor in ("m", "l"):
                    _check_output(m, tensor, final[tensor][:, 0], self.algorithm)
            except _Fail as f:
                dep = _departure(m, table, self.algorithm, hints)
                stored_at = {(st.i, st.j) for s in m._m.steps for st in s.stores if st.tensor == "O"}
                missing = [(i, j) for j in range(m.Tc) for i in range(m.Tr) if (i, j) not in stored_at]
                raise _Fail(dep or f"{f}. Every step you stored matches {self.algorithm}, but " + (
                    f"no store of O_i at (i, j) = {missing[0]}: store O_i, l_i, m_i for every (i, j)"
                    if missing else "did you store O_i, l_i, m_i for every (i, j)?")) from None
            _check_budget(m, cf, per_tensor, self.algorithm, _ALG1_BUDGET_HINTS)
            _check_written_in_own_block(m, ("Q", "O", "l", "m"), ("O", "l", "m"), "Algorithm 1 writes O_i, l_i, "
                                        "m_i back at every (i, j) (Alg1 L12, L13), before it loads the next block. "
                                        "Hint: store the block's rows inside the loop over i.")
            # Values and bytes right: a second run tells loads used from state kept in Python (_reload.py)
            check_loads_used(fn, self._machine(problem)[0]._m, q, k, v)
        except _Fail as f:
            return CheckResult(False, str(f), m, cf, where)
        return CheckResult(True, "", m, cf, where)


class BlockUpdate(Algorithm1):
    id = "block-update"
    title = "One (i, j) update of O_i, l_i, m_i"
    statement = """\
    HBM holds Q, K, V and O, l, m as Algorithm 1 leaves them after K/V blocks 0..j-1. Do the
    update of block (m.i, m.j) alone: load Q_i, K_j, V_j, O_i, l_i, m_i once each, compute
    Alg1 L9-L11, store O_i (L12) and l_i, m_i (L13). Rows of block i: m.i*m.Br .. ;
    of block j: m.j*m.Bc .. (the last blocks may be short). Judged against core's Algorithm 1
    step at (i, j) (1e-4 abs + 1e-4 rel); budget: that step's bytes."""
    starter = '''\
    import numpy as np

    def block_update(m):
        i, j = m.i, m.j
        q0, q1 = i * m.Br, min((i + 1) * m.Br, m.nq)
        k0, k1 = j * m.Bc, min((j + 1) * m.Bc, m.nk)
        m.step("Alg1 L8", i=i, j=j)
        Qi, Kj, Vj = m.load("Q", q0, q1), m.load("K", k0, k1), m.load("V", k0, k1)
        Oi, li, mi = m.load("O", q0, q1), m.load("l", q0, q1), m.load("m", q0, q1)
        # S = m.tau * Qi @ Kj.T; m~, P~, l~; m_new, l_new; O_new
        # m.step("Alg1 L12", i=i, j=j); m.store("O", q0, q1, O_new)
        # m.step("Alg1 L13", i=i, j=j); m.store("l", q0, q1, l_new); m.store("m", q0, q1, m_new)
    '''

    def problems(self):
        # Each (i, j) has rows whose max moves at j (alpha = e^(m_i - m_i^new) < 1 there), so that a
        # dropped rescale of the old state, or an m_i not stored, changes the result on every problem.
        return [((8, 8, 4, 64, 1), 1, 1), ((10, 13, 4, 64, 2), 2, 1), ((10, 13, 4, 64, 2), 1, 2)]

    def judge(self, fn, problem):
        sizes, bi, bj = problem
        nq, nk, d, M, seed = sizes
        q, k, v = _inputs(nq, nk, d, seed)
        ref = _core.run(q, k, v, schedule="fa1", M=M)
        before, after, reads, writes = [], {}, 0, 0
        for s in ref.steps:
            if s.j < bj:
                before += s.writes
            if s.j == bj and (s.label == "Alg1 L6" or s.i == bi):
                reads += s.read_bytes
                writes += s.write_bytes if s.i == bi else 0
                for tensor, row0, rows in (s.writes if s.i == bi else []):
                    after[(tensor, row0)] = {bj: rows[:, 0] if rows.shape[1] == 1 else rows}
        state = _replay(before, {"O": (nq, d), "l": (nq, 1), "m": (nq, 1)})
        core = _core_machine(q, k, v, M=M)
        core.put("O", state["O"])
        core.put("l", state["l"][:, 0])
        core.put("m", state["m"][:, 0])
        m = Machine(core, i=bi, j=bj)
        budget = (reads, writes)
        where = f"Nq = {nq}, Nk = {nk}, d = {d}, M = {M}, (i, j) = ({bi}, {bj})"
        try:
            _run_student(fn, m)
            q0, q1 = bi * m.Br, min((bi + 1) * m.Br, nq)
            k0, k1 = bj * m.Bc, min((bj + 1) * m.Bc, nk)
            scaled = _block_scale_hint(core.peek("m")[q0:q1], state["m"][q0:q1, 0], q[q0:q1], k[k0:k1], m.tau)
            for tensor in ("m", "l", "O"):
                got = core.peek(tensor)[q0:q1]
                exp = after[(tensor, q0)][bj]
                idx = _first_bad(got, exp)
                if idx is not None:
                    name = _elem_name(tensor, q0, idx, got.ndim == 1)
                    steps = [s for s in core.steps if any(st.tensor == tensor for st in s.stores)]
                    if not steps:
                        raise _Fail(f"{tensor} was never written: rows {q0}:{q1} still hold what they held before "
                                    f"the update ({name} = {_fmt(got[idx])}, Algorithm 1 has {_fmt(exp[idx])}). "
                                    "Hint: store O_i (Alg1 L12), then l_i and m_i (Alg1 L13).")
                    raise _Fail(_wrong_element(core, tensor, q0 + int(idx[0]), name, got[idx], exp[idx], "Algorithm 1",
                                               scaled or _ALG1_HINTS[tensor]))
            _check_budget(m, budget, self._per_tensor(m, bi, bj), "the Algorithm 1 step")
        except _Fail as f:
            return CheckResult(False, str(f), m, budget, where)
        return CheckResult(True, "", m, budget, where)

    @staticmethod
    def _per_tensor(m, bi, bj):
        rq = min((bi + 1) * m.Br, m.nq) - bi * m.Br
        rk = min((bj + 1) * m.Bc, m.nk) - bj * m.Bc
        tile_q, tile_k, vec = 4 * rq * m.d, 4 * rk * m.d, 4 * rq
        return {"Q": (tile_q, 0), "K": (tile_k, 0), "V": (tile_k, 0), "O": (tile_q, tile_q),
                "l": (vec, vec), "m": (vec, vec)}


class FA2Order(_Puzzle):
    id = "fa2-order"
    title = "FlashAttention-2's loop order: O written once"
    statement = """\
    HBM holds Q, K, V and room for O (Nq x d) and L (the logsumexp, Nq). Swap the loops: for
    each Q block i (outer), keep O_i, m_i, l_i on chip while K/V blocks j stream past; rescale
    O_i by e^(m_old - m_new) at each j, divide by l_i once at the end (FA2fwd L12), and write O_i
    and L_i = m_i + log l_i once (FA2fwd L14, L15). Budget, exact: FlashAttention-2's closed
    form (reads Nq d + Tr 2 Nk d, writes Nq d + Nq floats); SRAM: M, of which O_i's Br d are
    charged from the start (it stays on chip, in your array). Judged: O and L against float64;
    one problem's scores are near 800, where e^S overflows unless the max is subtracted, and in
    the last they jump by 1000 after K/V block 0, where a max not updated (no rescale) overflows."""
    starter = '''\
    import numpy as np

    def fa2_order(m):
        for i in range(m.Tr):
            q0, q1 = i * m.Br, min((i + 1) * m.Br, m.nq)
            m.step("FA2fwd L4", i=i)
            Qi = m.load("Q", q0, q1)
            Oi = np.zeros((q1 - q0, m.d)); li = np.zeros(q1 - q0); mi = np.full(q1 - q0, -np.inf)
            for j in range(m.Tc):
                k0, k1 = j * m.Bc, min((j + 1) * m.Bc, m.nk)
                m.step("FA2fwd L7", i=i, j=j)
                with m.sram():
                    Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                    # S_ij, m_new, P~, l, O_i rescaled and accumulated
            # O_i / l_i, L_i = m_i + log l_i; m.step("FA2fwd L14", i=i); m.store("O", ...); m.store("L", ...)
            m.free(Qi)
    '''
    schedule = "fa2"
    algorithm = "FlashAttention-2"
    causal = False
    hints = {
        "O": "Hint: O_i^(j) = diag(e^(m_i^(j-1) - m_i^(j))) O_i^(j-1) + P~_ij V_j on chip, then O_i / l_i once "
             "after the last j (FA2fwd L10, L12).",
        "L": "Hint: L_i = m_i + log l_i (FA2fwd L13), from the final m_i and l_i.",
    }

    def problems(self):
        return _attention_problems()

    def _reference(self, q, k, v, M):
        return _core.run(q, k, v, schedule="fa2", M=M, causal=self.causal)

    def _budget(self, ref):
        return ref.closed_form_read_bytes, ref.closed_form_write_bytes

    def judge(self, fn, problem):
        nq, nk, d, M, (q, k, v), where = _attention_problem(problem)
        core = _core_machine(q, k, v, M=M, causal=self.causal, schedule="fa2")
        core.put("O", np.zeros((nq, d), np.float32))
        core.put("L", np.zeros(nq, np.float32))
        # O_i stays on chip over the j loop (core's FlashAttention-2 charges it to M): the student
        # keeps it as a plain array, so its Br d are charged from the start
        core.reserve(core.Br * d, "O_i (Br d)")
        m = Machine(core)
        ref = self._reference(q, k, v, M)
        budget = self._budget(ref)
        try:
            _run_student(fn, m)
            if "L" not in {st.tensor for s in core.steps for st in s.stores}:
                raise _Fail("L was never written. Hint: lse not saved: store L_i = m_i + log l_i for every Q "
                            "block (FA2fwd L13, L15); the backward pass recomputes P from it.")
            _check_rows_loaded(m, self.causal)
            o64, lse64 = _core.reference_attention(q, k, v, m.tau, causal=self.causal)
            # Is L right? Then the scores, mask and row statistics are, and a wrong O is its own update.
            l_right = _first_bad(core.peek("L"), lse64) is None
            # inf or nan where the reference is finite (an overflow; L = -inf, a row that summed no key), or S unscaled
            lse_at = lambda s: _core.reference_attention(q, k, v, s, causal=self.causal)[1]  # noqa: E731
            cause = _not_finite_hint(core.peek("O"), core.peek("L"), lse64, self.causal) or \
                _scale_hint(core.peek("L"), lse_at, m.tau, d, "FA2fwd L8")
            for tensor, exp in (("O", o64), ("L", lse64)):
                try:
                    _check_output(m, tensor, exp, "the float64 reference")
                except _Fail as f:
                    hint = (lambda t: cause) if cause else \
                        (lambda t: FA2Order.hints.get(t, "")) if tensor == "O" and l_right else self._hint
                    dep = _departure(m, _writes_table(ref), self.algorithm, hint)
                    raise _Fail(dep or f"{f}. {hint(tensor)}") from None
            _check_written_in_own_block(m, ("Q",), ("O", "L"), _OWN_BLOCK_WHY)
            _check_budget(m, budget, ref.tensor_bytes, self.algorithm, self._budget_hints())
        except _Fail as f:
            return CheckResult(False, str(f), m, budget, where)
        return CheckResult(True, "", m, budget, where)

    def _hint(self, tensor):
        return self.hints.get(tensor, "")

    def _budget_hints(self):
        return dict(_FA2_BUDGET_HINTS)


class Causal(FA2Order):
    id = "causal"
    title = "Causal attention with block skipping"
    statement = """\
    fa2-order with a causal mask, bottom-right aligned (row r keeps key c when
    c <= r + Nk - Nq, as FlashAttention does when Nq != Nk). Mask S_ij element by element in
    the blocks the diagonal crosses and skip, without loading K_j, V_j, the blocks that lie
    wholly above it. Budget, exact: the bytes of core's causal FlashAttention-2 run, strictly
    under the unmasked closed form. Judged: O and L against the float64 causal reference; one
    problem's scores are near 800, and in the last they jump by 1000 after K/V block 0."""
    starter = FA2Order.starter.replace("def fa2_order", "def causal")
    algorithm = "FlashAttention-2 (causal)"
    causal = True
    hints = {
        "O": "Hint: mask S_ij: key c is kept for row r when c <= r + (Nk - Nq) (bottom-right aligned); masked "
             "scores are -inf before the max and exp.",
        "L": "Hint: L_i = m_i + log l_i over the kept keys only: mask S_ij before m~ and l~, keeping key c for "
             "row r when c <= r + (Nk - Nq) (bottom-right aligned).",
    }

    def problems(self):
        return [(12, 12, 4, 64, 4, 0.0, False), (6, 10, 4, 64, 5, 0.0, False), (9, 14, 8, 128, 6, 0.0, False),
                (11, 13, 4, 64, 13, 800.0, False), (10, 12, 4, 64, 15, 1000.0, True)]

    def _budget(self, ref):
        return ref.hbm_read_bytes, ref.hbm_write_bytes

    def _budget_hints(self):
        h = super()._budget_hints()
        h[("K", "read")] = h[("V", "read")] = ("Hint: skip the K/V blocks wholly above the diagonal (every key of "
                                               "the block beyond r + Nk - Nq for every row r of Q_i)")
        return h


class BackwardBlock(_Puzzle):
    id = "backward-block"
    title = "dK_j, dV_j for one K/V block, by recomputation"
    statement = """\
    HBM holds Q, K, V, the forward's O and L (logsumexp, from core's FlashAttention-2 run), dO,
    D = rowsum(dO o O) (FA2's backward computes it once, in its line 4), and room for dK, dV.
    For the K/V block m.j: load K_j, V_j once; for every Q block i load Q_i, dO_i, L_i, D_i,
    recompute P_ij = exp(tau Q_i K_j^T - L_i), then dV_j += P_ij^T dO_i, dP_ij = dO_i V_j^T,
    dS_ij = P_ij o (dP_ij - D_i), dK_j += tau dS_ij^T Q_i (FA2's Algorithm 2, lines 9-14).
    Store dK_j, dV_j once. Budget: FA2b's reads for one K/V block, K_j, V_j (its L6) and
    Q_i, dO_i, L_i, D_i for every i (its L9): 2 Bc d + Nq (2d + 2) floats; 2 Bc d written.
    SRAM: the tiles FA2's backward holds here, K_j, V_j, dK_j, dV_j (4 Bc d) and Q_i, dO_i
    (2 Br d), within core's backward budget 2M; dK_j and dV_j's 2 Bc d are charged from the
    start (they accumulate on chip, in your arrays). Judged against core's
    float64 gradients (1e-4 abs + 1e-4 rel). In the app (trace.save) your steps follow core's
    FlashAttention-2 forward of the same problem; label them with FA2b's lines and note the
    tiles (m.note(P=..., dV=dVj, ...)) to see them on chip."""
    starter = '''\
    import numpy as np

    def backward_block(m):
        j = m.j
        k0, k1 = j * m.Bc, min((j + 1) * m.Bc, m.nk)
        m.step("FA2b L6", j=j)
        Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
        dKj = np.zeros((k1 - k0, m.d)); dVj = np.zeros((k1 - k0, m.d))
        for i in range(m.Tr):
            q0, q1 = i * m.Br, min((i + 1) * m.Br, m.nq)
            m.step("FA2b L9", i=i, j=j)
            with m.sram():
                Qi, dOi = m.load("Q", q0, q1), m.load("dO", q0, q1)
                Li, Di = m.load("L", q0, q1), m.load("D", q0, q1)
                # P_ij, dV_j, dP_ij, dS_ij, dK_j; for the app, each at its line with its
                # on-chip result: m.step("FA2b L12", i=i, j=j); ...; m.note(dV=dVj)
        m.step("FA2b L18", j=j)
        m.store("dK", k0, k1, dKj); m.store("dV", k0, k1, dVj)
    '''

    def problems(self):
        return [((8, 8, 4, 64, 1), 1), ((10, 13, 4, 64, 2), 3), ((7, 5, 8, 128, 3), 0)]

    def judge(self, fn, problem):
        (nq, nk, d, M, seed), bj = problem
        q, k, v = _inputs(nq, nk, d, seed)
        dout = np.random.default_rng(seed).normal(size=(nq, d)).astype(np.float32)
        fwd = _core.run(q, k, v, schedule="fa2", M=M)
        # SRAM: the tiles this schedule holds, K_j, V_j, dK_j, dV_j (4 Bc d) and Q_i, dO_i (2 Br d),
        # within core's backward budget of 2M (which also has room for O_i and dQ_i, not used here)
        Bc, Br = fwd.tiling.Bc, fwd.tiling.Br
        core = _core_machine(q, k, v, M=M, capacity=4 * Bc * d + 2 * Br * d, schedule="fa2")
        core.put("O", fwd.o)
        core.put("L", fwd.lse)
        core.put("dO", dout)
        # D = rowsum(dO o O) of the float32 O in HBM, as FA2b L4 computes it, kept in float32
        core.put("D", (dout.astype(np.float64) * fwd.o.astype(np.float64)).sum(axis=1).astype(np.float32))
        core.put("dK", np.zeros((nk, d), np.float32))
        core.put("dV", np.zeros((nk, d), np.float32))
        rk = min((bj + 1) * core.Bc, nk) - bj * core.Bc
        # dK_j, dV_j accumulate on chip (core's backward budget holds them): the student keeps them
        # as plain arrays, so their 2 Bc d are charged from the start
        core.reserve(2 * rk * d, "dK_j and dV_j (2 Bc d)")
        m = Machine(core, j=bj)
        budget = (4 * (2 * rk * d + nq * (2 * d + 2)), 4 * 2 * rk * d)
        per_tensor = {"K": (4 * rk * d, 0), "V": (4 * rk * d, 0), "Q": (4 * nq * d, 0), "dO": (4 * nq * d, 0),
                      "L": (4 * nq, 0), "D": (4 * nq, 0), "O": (0, 0), "dK": (0, 4 * rk * d), "dV": (0, 4 * rk * d)}
        where = f"Nq = {nq}, Nk = {nk}, d = {d}, M = {M}, j = {bj}"
        try:
            _run_student(fn, m)
            _, dk64, dv64 = _core.reference_backward(q, k, v, dout, m.tau)
            k0, k1 = bj * m.Bc, bj * m.Bc + rk
            for tensor, exp, hint in (
                    ("dV", dv64, "Hint: P_ij = exp(tau Q_i K_j^T - L_i) with the forward's logsumexp L_i (no "
                                 "fresh max or sum), and dV_j += P_ij^T dO_i over every i."),
                    ("dK", dk64, "Hint: dS_ij = P_ij o (dP_ij - D_i) with D_i = rowsum(dO_i o O_i), and "
                                 "dK_j += tau dS_ij^T Q_i (the scale tau too).")):
                got = core.peek(tensor)[k0:k1]
                idx = _first_bad(got, exp[k0:k1])
                if idx is not None:
                    steps = [s for s in core.steps if any(st.tensor == tensor for st in s.stores)]
                    if not steps:
                        raise _Fail(f"{tensor} was never written (rows {k0}:{k1}). Hint: accumulate dK_j, dV_j "
                                    "on chip over every i and store them once, after the loop (FA2b L18).")
                    raise _Fail(_wrong_element(core, tensor, k0 + int(idx[0]), f"{tensor}[{k0 + int(idx[0])}, {int(idx[1])}]",
                                               got[idx], exp[k0:k1][idx], "the float64 gradient", hint))
            _check_budget(m, budget, per_tensor, "FA2's backward",
                          {("K", "read"): "Hint: load K_j, V_j once, outside the loop over i",
                           ("V", "read"): "Hint: load K_j, V_j once, outside the loop over i",
                           ("O", "read"): "Hint: D_i is in HBM (FA2b L4 computed it once for every j): load D_i "
                                          "(Br floats), not O_i (Br d)",
                           ("dK", "written"): "Hint: accumulate dK_j, dV_j on chip and store them once"})
        except _Fail as f:
            msg = str(f)
            if "SRAM full: loading O[" in msg:
                msg += (" Hint: D_i is in HBM (FA2b L4 computed it once for every j): load D_i (Br floats), "
                        "not O_i (Br d).")
            return CheckResult(False, msg, m, budget, where)
        return CheckResult(True, "", m, budget, where)


class DecodeCombine(_Puzzle):
    id = "decode-combine"
    title = "Flash-decoding's combine: merge split partials by their log-sum-exp"
    statement = """\
    Flash-decoding split the K/V blocks into m.S ranges; split s left a partial O^(s) and
    lse^(s) for every query row, stacked in HBM: Op (S Nq x d) rows s*Nq + r, Lp (S Nq). A split
    whose keys are all padding saw no key: lse^(s) = -inf, O^(s) = 0. For each Q block:
    lse_i = max_s lse^(s) + log sum_s e^(lse^(s) - max), O_i = sum_s e^(lse^(s) - lse_i) O^(s)
    (FD L17, L18); store O_i and L_i (FD L19, L20). Budget, exact: the bytes of core's combine
    (reads S Nq (d + 1), writes Nq (d + 1) floats). Judged: O and L against float64 attention;
    one problem's lse^(s) are near 800, where e^lse overflows unless the max is subtracted, and
    in the last split 0's lse^(s) is 1000 below the others': the reference must be the max."""
    starter = '''\
    import numpy as np

    def decode_combine(m):
        for i in range(m.Tr):
            q0, q1 = i * m.Br, min((i + 1) * m.Br, m.nq)
            m.step("FD L17", i=i)
            lse = [m.load("Lp", s * m.nq + q0, s * m.nq + q1) for s in range(m.S)]
            # lse_i = ...
            m.step("FD L18", i=i)
            # O_i = sum over s of weights times m.load("Op", s * m.nq + q0, s * m.nq + q1)
            # m.step("FD L19", i=i); m.store("O", q0, q1, Oi); m.step("FD L20", i=i); m.store("L", q0, q1, Li)
    '''

    def problems(self):
        # the last: keys from Nk / 2 on score 1000 higher, so split 0's lse is 1000 below the others'
        # and only the max over the splits keeps e^(lse^(s) - max) finite
        return [(4, 37, 8, 128, 3, 20, 7, 0.0, False), (1, 23, 4, 64, 2, -1, 8, 0.0, False),
                (5, 30, 4, 64, 4, 9, 9, 0.0, False), (3, 29, 4, 64, 3, -1, 14, 800.0, False),
                (5, 30, 4, 64, 4, -1, 16, 1000.0, True)]

    def judge(self, fn, problem):
        nq, nk, d, M, S, kv_len, seed, offset, rise = problem
        q, k, v = _inputs(nq, nk, d, seed, offset, nk // 2 if rise else None)
        ref = _core.run(q, k, v, schedule="decode", M=M, splits=S, kv_len=kv_len)
        writes = [w for s in ref.steps for w in s.writes]
        rename = {"O^(s)": "Op", "lse^(s)": "Lp"}
        state = _replay([(rename.get(t, t), r0, rows) for t, r0, rows in writes], {"Op": (S * nq, d), "Lp": (S * nq, 1)})
        core = _core_machine(q, k, v, M=M, schedule="decode", splits=S, kv_len=kv_len)
        core.put("Op", state["Op"])
        core.put("Lp", state["Lp"][:, 0])
        core.put("O", np.zeros((nq, d), np.float32))
        core.put("L", np.zeros(nq, np.float32))
        m = Machine(core, S=S)
        budget = (sum(s.read_bytes for s in ref.steps if s.role == "combine"),
                  sum(s.write_bytes for s in ref.steps if s.label in ("FD L19", "FD L20")))
        where = f"Nq = {nq}, Nk = {nk}, d = {d}, S = {S}" + (f", kv_len = {kv_len}" if kv_len >= 0 else "") + \
            (f", scores {offset:g} higher from key {nk // 2} on" if rise else f", scores near {offset:g}" if offset else "")
        try:
            _run_student(fn, m)
            if not any(st.tensor == "L" for step in core.steps for st in step.stores):
                raise _Fail("L was never written. Hint: lse not saved: store L_i = lse_i (FD L20); a later combine "
                            "or the backward needs it.")
            o64, lse64 = _core.reference_attention(q, k, v, m.tau, kv_len=kv_len)
            combined = _writes_table(ref)
            for tensor, exp in (("L", lse64), ("O", o64)):
                try:
                    _check_output(m, tensor, exp, "the float64 reference")
                except _Fail as f:
                    dep = _departure(m, combined, "the combine", self._hint)
                    raise _Fail(dep or f"{f}. {self._hint(tensor)}") from None
            _check_written_in_own_block(m, ("Lp", "Op"), ("O", "L"), "the combine writes O_i and L_i (FD L19, L20) "
                                        "before it loads the next Q block's partials. Hint: store each block's rows "
                                        "inside the loop over i.", period=nq)
            _check_budget(m, budget, self._per_tensor(nq, d, S), "the combine")
        except _Fail as f:
            msg = str(f)
            if "nan" in msg:
                msg += (" Hint: -inf - (-inf) = nan: subtract the max over the splits (finite when any split saw "
                        "a key); a split with lse^(s) = -inf gets weight e^(-inf) = 0.")
            elif "= inf" in msg:
                msg += (" Hint: e^(lse^(s) - r) overflowed: r must be the max over the splits, so that every "
                        "weight is at most 1.")
            return CheckResult(False, msg, m, budget, where)
        return CheckResult(True, "", m, budget, where)

    @staticmethod
    def _hint(tensor):
        if tensor == "L":
            return ("Hint: lse_i = max_s lse^(s) + log sum_s e^(lse^(s) - max_s lse^(s)) (FD L17); a split with "
                    "lse^(s) = -inf adds e^(-inf) = 0, never e^0 = 1.")
        return ("Hint: O_i = sum_s e^(lse^(s) - lse_i) O^(s) (FD L18): each partial weighted by its share of the "
                "softmax's sum, not averaged.")

    @staticmethod
    def _per_tensor(nq, d, S):
        return {"Op": (4 * S * nq * d, 0), "Lp": (4 * S * nq, 0), "O": (0, 4 * nq * d), "L": (0, 4 * nq)}


# [SECTION] the puzzles' API

_PUZZLES = [SafeSoftmax(), OnlineSoftmax(), BlockUpdate(), Algorithm1(), FA2Order(), Causal(), BackwardBlock(),
            DecodeCombine()]


def list():  # noqa: A001 (the issue's name: flashstep.puzzles.list())
    """The puzzle ids, in the order of the textbook chapter."""
    return [p.id for p in _PUZZLES]


def _get(puzzle_id):
    for p in _PUZZLES:
        if p.id == puzzle_id:
            return p
    raise ValueError(f"unknown puzzle '{puzzle_id}' (the ids: {', '.join(p.id for p in _PUZZLES)})")


def statement(puzzle_id):
    """The puzzle's title and statement."""
    p = _get(puzzle_id)
    return f"{p.id}: {p.title}\n\n{textwrap.dedent(p.statement)}"


def starter(puzzle_id):
    """The starter code (fill in the comments)."""
    return textwrap.dedent(_get(puzzle_id).starter)


def show(puzzle_id):
    """Prints the statement and the starter."""
    builtins.print(statement(puzzle_id) + "\n\nStarter:\n\n" + starter(puzzle_id))


def check(puzzle_id, fn):
    """Runs fn(m) on each of the puzzle's problems (ragged sizes included) and judges it: the
    result against float64, the bytes against the budget, SRAM against M. Returns a
    CheckResult (passed, message, read_bytes, write_bytes, budget_read, budget_write,
    peak_sram, trace); the first problem that fails is the one reported."""
    p = _get(puzzle_id)
    if not callable(fn):
        raise ValueError(f"check('{puzzle_id}', fn): fn must be a function of the machine m")
    first = None
    problems = p.problems()
    for problem in problems:
        r = p.judge(fn, problem)
        if not r.passed:
            r.message = f"{p.id} failed on {r.problem}: {r.message}"
            return r
        first = first or r
    first.message = (f"{p.id} passed on {len(problems)} problems; on {first.problem}: read {first.read_bytes} B "
                     f"of {first.budget_read} B, wrote {first.write_bytes} B of {first.budget_write} B, peak SRAM "
                     f"{first.peak_sram} B")
    return first
