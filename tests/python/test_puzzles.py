"""The puzzles: a right solution passes each; typical wrong ones fail with the intended diagnosis."""
import json

import numpy as np
import pytest

import flashstep
import solutions as S
from flashstep import puzzles

IDS = ["safe-softmax", "online-softmax", "block-update", "algorithm-1", "fa2-order", "causal", "backward-block",
       "decode-combine"]

RIGHT = {
    "safe-softmax": S.safe_softmax,
    "online-softmax": S.online_softmax,
    "block-update": S.block_update_with(),
    "algorithm-1": S.algorithm_1_with(),
    "fa2-order": S.fa2_with(),
    "causal": S.fa2_with(causal=True),
    "backward-block": S.backward_block_with(),
    "decode-combine": S.decode_combine_with(),
}

# (puzzle, wrong solution, what the message must say)
WRONG = [
    ("safe-softmax", S.safe_softmax_no_max, ["y[0] = nan", "subtract max(x)"]),
    # the reference must be the max: the min, or any other number, overflows once the row spans 2000
    ("safe-softmax", S.safe_softmax_min_ref, ["N = 16", "y[", "= nan", "subtract max(x)"]),
    ("safe-softmax", S.safe_softmax_two_reads, ["read over the budget", "x read 400 B where", "read 200 B"]),
    ("safe-softmax", S.safe_softmax_not_normalised, ["but the float64 softmax has", "divide e^(x - m) by l"]),
    ("online-softmax", S.online_softmax_no_rescale,
     ["after your block 1 (x[2:4]), l = 2.736 but the lesson has 1.553", "missing rescale"]),
    ("online-softmax", S.online_softmax_max_not_carried, ["m = 2.474 but the lesson has 4.7", "max is not carried"]),
    ("online-softmax", S.online_softmax_quiet_fixed_max, ["N = 24, blocks of 8, values 2000 higher in block 1",
                                                         "y[8] = nan"]),
    ("online-softmax", S.online_softmax_stores_before_merge, ["after your block 0", "m = -inf",
                                                             "the ones before this block's merge"]),
    ("safe-softmax", S.safe_softmax_view_after_free, ["y[0] = nan", "x left it before y was stored",
                                                      "np.asarray(tile) kept past its block"]),
    ("algorithm-1", S.algorithm_1_kv_block_cut, ["K read 96 B where Algorithm 1 read 128 B",
                                                 "a block loaded short leaves keys out"]),
    ("algorithm-1", S.algorithm_1_last_j_left_out, ["Every step you stored matches Algorithm 1",
                                                    "no store of O_i at (i, j) = (0, 1)"]),
    ("online-softmax", S.online_softmax_whole_row, ["SRAM full", "M = 2", "one block fits"]),
    ("online-softmax", S.online_softmax_quiet_no_rescale, ["y[0] = ", "but the float64 softmax has",
                                                          "l_new = e^(m - m_new) l"]),
    ("block-update", S.block_update_with(rescale=False),
     ["after your step 'Alg1 L13' at i = 1, j = 1, l_4 = 4.977 but Algorithm 1 has 2.959", "missing rescale"]),
    ("block-update", S.block_update_with(carry_max=False), ["m_5 = 0.4372 but Algorithm 1 has 1.312",
                                                            "max not carried"]),
    ("block-update", S.block_update_with(rescale_o=False), ["'Alg1 L12'", "O[4, 0] =", "O_i is rescaled"]),
    # the first problem's max moves in rows 4 and 5: alpha = e^(m_i - m_i^new) left out, or m_i not
    # stored, shows there (not only on a later problem)
    ("block-update", S.block_update_with(keep_alpha=False), ["(i, j) = (1, 1)", "l_4 = 4.977", "missing rescale"]),
    ("block-update", S.block_update_with(store_m=False), ["(i, j) = (1, 1)", "m was never written: rows 4:8"]),
    ("block-update", S.block_update_reading_twice, ["64 B read over the budget", "K read 128 B where"]),
    ("algorithm-1", S.algorithm_1_with(rescale=False), ["at i = 0, j = 1, l_0 =", "missing rescale"]),
    ("algorithm-1", S.algorithm_1_with(carry_max=False), ["m_0 = 0.3357 but Algorithm 1 has 0.343",
                                                          "max not carried"]),
    ("algorithm-1", S.algorithm_1_with(rescale_o=False), ["'Alg1 L12'", "O_i is rescaled"]),
    ("algorithm-1", S.algorithm_1_with(loop_swapped=True),
     ["256 B read over the budget", "K read 256 B where Algorithm 1 read 128 B"]),
    ("algorithm-1", S.algorithm_1_whole_kv, ["SRAM full: loading Q[0:4] (16 elements) while holding 64",
                                             "of M = 64"]),
    # Algorithm 1's bytes and final HBM, but not its HBM in between: every store is judged
    ("algorithm-1", S.algorithm_1_off_chip(), ["after your step 'Alg1 L13' at i = 0, j = 0, m_0 = 0 but Algorithm 1 "
                                               "has 0.343"]),
    # O_i, l_i, m_i loaded (the bytes) but the update made from a copy kept in Python: the stores and the
    # result are Algorithm 1's, so only the second run, whose reloads hand back another state, tells
    ("algorithm-1", S.algorithm_1_with(state_in_python=True),
     ["Nq = 8, Nk = 8", "the O_i, l_i, m_i you loaded at j = 1 were not used", "a second time",
      "your step 'Alg1 L12' at i = 0, j = 1 stored O[0, 0] = 0.4998, the first run's value", "kept in Python"]),
    ("algorithm-1", S.algorithm_1_with(state_in_python=True, in_pieces=True), ["loaded at j = 1 were not used"]),
    ("algorithm-1", S.algorithm_1_off_chip(per_j_store=True), ["O[0:8] was stored after m[4:8] (Q block 4:8) was "
                                                               "loaded", "back at every (i, j)"]),
    ("fa2-order", S.fa2_with(o_every_j=True), ["written over the budget", "where FlashAttention-2 wrote",
                                               "O written every j"]),
    ("fa2-order", S.fa2_with(save_lse=False), ["L was never written", "lse not saved"]),
    # all of O fits one store (Nq d <= M) and the bytes are FlashAttention-2's: the order tells
    ("fa2-order", S.fa2_with(store_at_end=True), ["O[0:8] was stored after Q[4:8] (Q block 4:8) was loaded",
                                                  "at the end of their own Q block i"]),
    ("causal", S.fa2_with(causal=True, store_at_end=True), ["O[0:", "was stored after Q[", "FA2fwd L14, L15"]),
    ("fa2-order", S.fa2_with(normalise=False), ["after your step 'FA2fwd L14' at i = 0, O[0, 0] = 2.789",
                                                "O_i / l_i once"]),
    # the max of the first block kept, no rescale: right until a later block's scores are far higher
    ("fa2-order", S.fa2_with(rescale=False), ["scores 1000 higher from K/V block 1 on", "e^(S - m) overflowed",
                                              "rescale l_i and O_i"]),
    ("causal", S.fa2_with(causal=True, rescale=False), ["scores 1000 higher from K/V block 1 on", "overflowed"]),
    ("causal", S.fa2_with(causal=True, skip=False), ["read over the budget", "skip the K/V blocks"]),
    ("causal", S.fa2_with(causal=True, align_top_left=True), ["Nq = 6, Nk = 10", "bottom-right"]),
    ("causal", S.fa2_with(causal=False), ["FlashAttention-2 (causal) has", "mask S_ij"]),
    ("backward-block", S.backward_block_with(use_D=False), ["dK[4, 0] = 0.1913", "dS_ij = P_ij o (dP_ij - D_i)"]),
    ("backward-block", S.backward_block_with(subtract_L=False), ["dV[4, 0]", "logsumexp L_i"]),
    ("backward-block", S.backward_block_with(tau_in_dk=False), ["dK[4, 0] = 0.4947", "the scale tau"]),
    # the schedule's tiles fill SRAM: K_j, V_j loaded again while held, or O_i beside D_i, do not fit
    ("backward-block", S.backward_block_with(reload_kv=True), ["SRAM full", "K[4:8], V[4:8], K[4:8], V[4:8]"]),
    # every Q_i and dO_i kept: the room they take is dK_j and dV_j's, charged from the start
    ("backward-block", S.backward_block_with(hold_q=True), ["SRAM full", "32 of M are dK_j and dV_j (2 Bc d)"]),
    ("backward-block", S.backward_block_with(d_from_o=True), ["SRAM full: loading O[0:4]", "load D_i"]),
    ("decode-combine", S.decode_combine_with("average"), ["O[0, 0] =", "not averaged"]),
    ("decode-combine", S.decode_combine_with("inf_as_zero"), ["L_0 = 3.428 but the combine has 3.395",
                                                             "e^(-inf) = 0"]),
    ("decode-combine", S.decode_combine_with("first_split_max"), ["scores 1000 higher from key 15 on", "L_0 = inf",
                                                                  "the max over the splits"]),
    ("decode-combine", S.decode_combine_with("store_at_end"), ["Nq = 5", "O[0:5] was stored after Op[19:20] "
                                                               "(Q block 4:5) was loaded"]),
    ("decode-combine", S.decode_combine_with("no_lse"), ["L was never written", "lse not saved"]),
]


def test_ids_in_the_chapters_order():
    assert puzzles.list() == IDS


@pytest.mark.parametrize("pid", IDS)
def test_right_solution_passes(pid, tmp_path):
    r = puzzles.check(pid, RIGHT[pid])
    assert r.passed, r.message
    assert bool(r) and "passed on" in r.message
    assert 0 < r.read_bytes <= r.budget_read and 0 < r.write_bytes <= r.budget_write
    assert 0 < r.peak_sram
    assert r.trace.steps and r.trace.steps[0].label


@pytest.mark.parametrize("pid,fn,expected", WRONG, ids=[f"{w[0]}-{k}" for k, w in enumerate(WRONG)])
def test_wrong_solution_fails_with_its_diagnosis(pid, fn, expected):
    r = puzzles.check(pid, fn)
    assert not r.passed
    for text in expected:
        assert text in r.message, f"'{text}' not in: {r.message}"


def test_a_q_block_loaded_in_pieces_is_still_its_block():
    r = puzzles.check("fa2-order", S.fa2_q_in_halves)
    assert r.passed, r.message


def test_algorithm_1_state_loaded_and_stored_in_pieces_passes_and_the_second_run_is_not_reported():
    # O_i by row and column halves, l_i and m_i by row halves: each element gets the state of its own
    # version in the second run, so the pieces add up to one block's state
    r = puzzles.check("algorithm-1", S.algorithm_1_with(in_pieces=True))
    assert r.passed, r.message
    # bytes, SRAM and trace are the first run's: its last O store holds the problem's own attention
    assert (r.read_bytes, r.write_bytes) == (r.budget_read, r.budget_write) == (896, 384)
    q, k, v = puzzles._inputs(8, 8, 4, 1)
    o64, _ = flashstep._core.reference_attention(q, k, v, 0.5)
    last = [st for s in r.trace.steps for st in s.stores if st.tensor == "O" and st.r0 == 0][-2:]
    np.testing.assert_allclose(np.hstack([st.data for st in last]), o64[:4], rtol=1e-4, atol=1e-4)


def test_algorithm_1_state_partly_kept_in_python_is_caught():
    def partial(*which):  # one or two of O_i, l_i, m_i taken from Python at j >= 1, the others as loaded
        kept = {}

        def fn(m):
            for j in range(m.Tc):
                k0, k1 = S.rows(j, m.Bc, m.nk)
                m.step("Alg1 L6", j=j)
                with m.sram():
                    Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                    for i in range(m.Tr):
                        with m.sram():
                            q0, q1, Qi, Oi, li, mi = S.alg1_loads(m, i, j)
                            state = [np.array(Oi), np.array(li), np.array(mi)]
                            if j > 0:
                                for w in which:
                                    state[w] = kept[i][w]
                            kept[i] = On, ln, mn = S.alg1_update(Qi, Kj, Vj, *state, m.tau)
                            m.step("Alg1 L12", i=i, j=j)
                            m.store("O", q0, q1, On)
                            m.step("Alg1 L13", i=i, j=j)
                            m.store("l", q0, q1, ln)
                            m.store("m", q0, q1, mn)
        return fn
    # The message names what was kept, worked out by the judge's own recursion for each choice.
    cases = {(0,): ("O_i", "l_i and m_i"), (1,): ("l_i", "O_i and m_i"), (2,): ("m_i", "O_i and l_i"),
             (0, 2): ("O_i and m_i", "l_i"), (1, 2): ("l_i and m_i", "O_i")}
    for which, (kept, used) in cases.items():
        r = puzzles.check("algorithm-1", partial(*which))
        assert not r.passed
        assert "continuing from the state you loaded at j = 1" in r.message, r.message
        assert f"your update used {kept} kept in Python across j (the {used} you loaded were used)" in r.message, \
            r.message


def test_algorithm_1_second_run_prints_nothing(capsys):
    calls = []

    def chatty(m):
        calls.append(1)
        print("hello from the student")
        return S.algorithm_1_with()(m)
    r = puzzles.check("algorithm-1", chatty)
    assert r.passed, r.message
    # each problem runs the function twice (the second run: _reload.py); its prints show once
    assert len(calls) >= 2 and len(calls) % 2 == 0
    assert capsys.readouterr().out.count("hello from the student") == len(calls) // 2


def test_online_softmax_without_the_per_block_stores_is_judged_on_y():
    r = puzzles.check("online-softmax", S.online_softmax_quiet)
    assert r.passed, r.message


def test_every_puzzle_has_three_wrong_solutions():
    for pid in IDS:
        assert sum(1 for w in WRONG if w[0] == pid) >= 3, pid


def test_algorithm_1_is_judged_on_core_bytes():
    r = puzzles.check("algorithm-1", RIGHT["algorithm-1"])
    # Algorithm 1's closed form on the tiny problem (N = 8, d = 4, M = 64: Tc = 2), as `flashstep run` prints
    # it (896 B read, 576 B written), less line 2's O = 0, l = 0, m = -inf (8 x 6 floats), which the
    # puzzle wrote: the budget is exact, so it has no slack a solution could spend
    assert (r.budget_read, r.budget_write) == (896, 576 - 4 * 8 * 6)
    assert r.read_bytes == 896 and r.write_bytes == 384
    assert r.peak_sram <= 64 * 4


def test_causal_budget_is_strictly_under_the_unmasked_one():
    r = puzzles.check("causal", RIGHT["causal"])
    import flashstep
    unmasked = flashstep.closed_form("fa2", 12, 12, 4, 64)
    assert r.budget_read < unmasked["read_bytes"]
    assert r.read_bytes == r.budget_read


def test_show_prints_statement_and_starter(capsys):
    for pid in IDS:
        puzzles.show(pid)
        out = capsys.readouterr().out
        assert out.startswith(pid + ": ") and "Starter:" in out and "def " in out
    with pytest.raises(ValueError, match="unknown puzzle 'nope'"):
        puzzles.check("nope", RIGHT["causal"])


def test_statements_fit_the_width_of_the_text_around_them():
    """show() prints the statement as written: a line far longer than the rest (safe-softmax's had
    144 characters among lines of 92) runs off a notebook's output cell."""
    for pid in IDS:
        assert max(len(line) for line in puzzles.statement(pid).splitlines()) <= 100, pid


def test_starters_run_but_do_not_pass():
    """Each starter is valid Python that the machine accepts, and incomplete: it fails."""
    for pid in IDS:
        scope = {}
        exec(puzzles.starter(pid), scope)
        fn = next(v for k, v in scope.items() if callable(v) and not k.startswith("_") and k != "np")
        r = puzzles.check(pid, fn)
        assert not r.passed, pid
        assert "raised" not in r.message and "stopped" not in r.message, r.message  # runs as it is
        assert "but" in r.message or "never written" in r.message, r.message


def test_student_errors_are_reported_not_raised():
    def broken(m):
        raise KeyError("oops")
    r = puzzles.check("algorithm-1", broken)
    assert not r.passed and "raised KeyError" in r.message

    def out_of_range(m):
        m.load("Q", 0, m.nq + 1)
    r = puzzles.check("algorithm-1", out_of_range)
    assert "are not inside Q" in r.message

    def unknown(m):
        m.load("Z", 0, 1)
    assert "no tensor 'Z'" in puzzles.check("algorithm-1", unknown).message

    def bad_free(m):
        m.free(np.zeros(3))
    assert "not a tile held in SRAM" in puzzles.check("algorithm-1", bad_free).message


def test_machine_counts_column_slices_and_frees():
    seen = {}

    def probe(m):
        m.step("Alg1 L6", j=0)
        t = m.load("K", 0, 4, 1, 3)  # 4 rows x 2 columns
        seen["shape"] = t.shape
        seen["read"] = m._m.read_bytes
        m.free(t)
        with m.sram():  # V and Q fill M = 64 exactly
            m.load("V", 0, m.nk)
            m.load("Q", 0, m.nq)
        m.load("K", 0, m.nk)  # fits again: the block freed them
        m.store("O", 0, 2, np.ones((2, 1)), c0=3)
        seen["write"] = m._m.write_bytes
    r = puzzles.check("algorithm-1", probe)
    assert "SRAM full" not in r.message
    assert seen == {"shape": (4, 2), "read": 4 * 4 * 2, "write": 2 * 4}


def test_trace_saves_in_the_apps_format(tmp_path):
    r = puzzles.check("algorithm-1", RIGHT["algorithm-1"])
    r.trace.save(tmp_path / "student.json")
    doc = json.loads((tmp_path / "student.json").read_text())
    assert doc["replay"]["format"] == "flashstep-trace-replay"
    assert [s["label"] for s in doc["steps"][:6]] == ["Alg1 L6", "Alg1 L8", "Alg1 L9", "Alg1 L10", "Alg1 L11",
                                                      "Alg1 L12"]
    # the noted l_i^new of L11 (on chip) is what L13 stores
    assert r.trace.steps[6].label == "Alg1 L13" and r.trace.steps[6].stores[0].tensor == "l"
    np.testing.assert_array_equal(np.array(doc["steps"][4]["values"]["l_new"], np.float32),
                                  r.trace.steps[6].stores[0].data)
    assert doc["totals"]["hbm_read_bytes"] == r.read_bytes
    # an attention puzzle's steps must be labelled with core's lines: the file is not written
    def free_label(m):
        m.step("my loop")
        m.load("Q", 0, 1)
    r = puzzles.check("algorithm-1", free_label)
    with pytest.raises(ValueError, match="no pseudocode line"):
        r.trace.save(tmp_path / "free.json")
    assert not (tmp_path / "free.json").exists()


def test_a_backward_tile_noted_at_another_line_is_refused_when_saving(tmp_path):
    right = S.backward_block_with()

    def dv_at_the_loads(m):  # dV~_j noted at FA2b L9, which loads and computes nothing
        right(m)
        m.step("FA2b L9", i=0, j=m.j)
        m.note(dV=np.zeros((S.rows(m.j, m.Bc, m.nk)[1] - m.j * m.Bc, m.d)))
    r = puzzles.check("backward-block", dv_at_the_loads)
    assert r.passed
    with pytest.raises(ValueError, match=r"\('FA2b L9'\) notes dV, which its line does not compute"):
        r.trace.save(tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


@pytest.mark.parametrize("puzzle", IDS)
def test_every_puzzles_trace_saves(puzzle, tmp_path):
    """The softmax puzzles' as a row's trace (their steps labelled freely), backward-block's after
    core's forward, the others as the attention traces they are."""
    r = puzzles.check(puzzle, RIGHT[puzzle])
    assert r.passed, r.message
    r.trace.save(tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    kind = "softmax-row" if puzzle in ("safe-softmax", "online-softmax") else "attention"
    assert doc["replay"]["kind"] == kind
    labels = [s["label"] for s in doc["steps"]]
    first = doc["phases"]["backward"]["first_step"] if puzzle == "backward-block" else 0
    assert labels[first:] == [s.label for s in r.trace.steps]
    assert doc["totals"]["hbm_read_bytes"] - (doc["phases"]["forward"]["hbm_read_bytes"] if first else 0) == r.read_bytes


def test_a_tile_is_held_until_freed_and_a_copy_frees_nothing():
    """A tile stays charged to M until m.free or the end of its `with m.sram():` block. Rebinding,
    deleting or copying the array (np.array, .astype) frees nothing: otherwise K and V whole could
    be copied out and the loop run from the copies, within M on paper."""
    def rebinds(m):  # K_j, V_j rebound in the j loop without a free
        Qi = m.load("Q", 0, m.Br)  # noqa: F841
        for j in range(m.Tc):
            k0, k1 = S.rows(j, m.Bc, m.nk)
            Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)  # noqa: F841
    r = puzzles.check("fa2-order", rebinds)
    # Q_0, K_0, V_0 and O_0's share (charged from the start) fill M: the next K_j does not fit
    assert "SRAM full: loading K[4:8]" in r.message and "K[0:4] is still held" in r.message, r.message
    assert "16 of M are O_i (Br d), on chip throughout" in r.message, r.message
    assert "copying its array frees nothing" in r.message

    def whole_kv_copied(m):  # S.algorithm_1_whole_kv with the copies a student would make
        m.step("Alg1 L6", j=0)
        K = m.load("K", 0, m.nk).astype(np.float64)
        V = np.array(m.load("V", 0, m.nk))
        for j in range(m.Tc):
            k0, k1 = S.rows(j, m.Bc, m.nk)
            for i in range(m.Tr):
                q0, q1 = S.rows(i, m.Br, m.nq)
                m.step("Alg1 L8", i=i, j=j)
                with m.sram():
                    Qi, Oi = m.load("Q", q0, q1), m.load("O", q0, q1)
                    li, mi = m.load("l", q0, q1), m.load("m", q0, q1)
                    On, ln, mn = S.alg1_update(Qi, K[k0:k1], V[k0:k1], Oi, li, mi, m.tau)
                    m.store("O", q0, q1, On)
                    m.store("l", q0, q1, ln)
                    m.store("m", q0, q1, mn)
    r = puzzles.check("algorithm-1", whole_kv_copied)
    assert not r.passed and "SRAM full: loading Q[0:4] (16 elements) while holding 64" in r.message, r.message

    def deleted(m):
        with m.sram():
            K = m.load("K", 0, m.Bc)
            del K
            assert m._m.steps[-1].charged_bytes == 4 * (m.Bc + m.Br) * m.d  # still held (and O_i's share)
        assert m._m.steps[-1].charged_bytes == 4 * m.Br * m.d  # the block's end frees it
    r = puzzles.check("fa2-order", deleted)
    assert "SRAM" not in r.message and "AssertionError" not in r.message, r.message


def _fa2_with_kv_cached(copy):
    """FlashAttention-2 whose K_j, V_j are loaded for i = 0 only, kept through `copy`, and reused."""
    def fn(m):
        cache = {}
        for i in range(m.Tr):
            q0, q1 = S.rows(i, m.Br, m.nq)
            m.step("FA2fwd L4", i=i)
            with m.sram():
                Qi = m.load("Q", q0, q1).astype(np.float64)
                Oi, li, mi = np.zeros((q1 - q0, m.d)), np.zeros(q1 - q0), np.full(q1 - q0, -np.inf)
                for j in range(m.Tc):
                    k0, k1 = S.rows(j, m.Bc, m.nk)
                    if j not in cache:
                        with m.sram():
                            cache[j] = (copy(m.load("K", k0, k1)), copy(m.load("V", k0, k1)))
                    Kj, Vj = cache[j]
                    s = m.tau * Qi @ Kj.T
                    mn = np.maximum(mi, s.max(1))
                    p = np.exp(s - mn[:, None])
                    a = np.exp(mi - mn)
                    Oi, li, mi = a[:, None] * Oi + p @ Vj, a * li + p.sum(1), mn
                m.step("FA2fwd L14", i=i)
                m.store("O", q0, q1, Oi / li[:, None])
                m.store("L", q0, q1, mi + np.log(li))
    return fn


def test_copies_kept_past_sram_read_fewer_bytes_than_the_schedule_and_fail():
    """Blocks copied out of SRAM and freed, then reused from Python. A copy by the tile's own method
    (.astype) is the tile: its use after the free is named at once. A plain copy (np.array) is the
    student's, within M, but fewer bytes than the schedule moves: the exact budget shows it."""
    r = puzzles.check("fa2-order", _fa2_with_kv_cached(lambda t: t.astype(np.float64)))
    assert not r.passed
    assert "K[0:4] was used after it left SRAM" in r.message and "load it again where the algorithm does" in \
        r.message, r.message
    r = puzzles.check("fa2-order", _fa2_with_kv_cached(lambda t: np.array(t, np.float64)))
    assert not r.passed
    assert "B read under the budget" in r.message and "K read 128 B where FlashAttention-2 read 256 B" in r.message, \
        r.message
    assert "load K_j, V_j again for every Q block i" in r.message


def test_a_tile_used_after_its_block_freed_it_is_named():
    """K_j, V_j loaded in a `with m.sram():` block and used after it: Algorithm 1 reads them once
    anyway, so the bytes alone would match. The tile, its views and its own copies refuse use."""
    r = puzzles.check("algorithm-1", S.algorithm_1_with(kv_used_after_block=True))
    assert not r.passed and "your function stopped: K[0:4] was used after it left SRAM" in r.message, r.message

    def uses(m):  # each way of reading a freed tile: indexing, a ufunc, a method, a view, float(), storing it
        with m.sram():
            t = m.load("Q", 0, m.Br)
            v, c = t.T, t.copy()
        for use in (lambda: t[0], lambda: np.exp(t), lambda: t.sum(), lambda: v @ np.ones(m.Br), lambda: c + 1,
                    lambda: float(t[0, 0]), lambda: np.concatenate([t, t]), lambda: m.store("O", 0, m.Br, t)):
            try:
                use()
            except ValueError as e:
                assert "Q[0:4] was used after it left SRAM" in str(e), str(e)
            else:
                raise AssertionError("a freed tile was read")
        assert np.isnan(np.asarray(t)).all()  # a plain view of its memory reads NaN
    r = puzzles.check("fa2-order", uses)
    assert "AssertionError" not in r.message and "raised" not in r.message, r.message


def test_the_budget_is_per_tensor_not_only_the_total():
    """Q_i kept (as a plain copy) from j = 0 and O_i loaded a second time in its place: 896 B read,
    Algorithm 1's total, but from the wrong tensors."""
    r = puzzles.check("algorithm-1", S.algorithm_1_with(q_kept_o_loaded=True))
    assert not r.passed, r.message
    assert "read 896 B, Algorithm 1's total, but not from the tensors it read" in r.message, r.message
    assert "Q read 128 B where Algorithm 1 read 256 B" in r.message and "O read 384 B where" in r.message


def test_the_judge_reads_hbm_only_around_the_function():
    """While the student's function runs the machine is sealed: HBM is reached only through m.load and
    m.store, so a peek or put through the machine's core object is refused, not a free read."""
    def peeks(m):
        m._m.peek("Q")
    r = puzzles.check("fa2-order", peeks)
    assert not r.passed and "peek('Q') while your function runs" in r.message, r.message

    def puts(m):
        m._m.put("O", np.zeros((m.nq, m.d), np.float32))
    assert "put('O') while your function runs" in puzzles.check("fa2-order", puts).message

    def unseals(m):
        m._m.unseal(1)
    assert "not unsealed by this token" in puzzles.check("fa2-order", unseals).message


def test_the_stores_infer_their_blocks_without_steps():
    """Without m.step the judge still finds the (i, j) of each store from the blocks loaded."""
    def no_steps(m):
        for j in range(m.Tc):
            k0, k1 = S.rows(j, m.Bc, m.nk)
            with m.sram():
                Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                for i in range(m.Tr):
                    q0, q1 = S.rows(i, m.Br, m.nq)
                    with m.sram():
                        Qi, Oi = m.load("Q", q0, q1), m.load("O", q0, q1)
                        li, mi = m.load("l", q0, q1), m.load("m", q0, q1)
                        On, ln, mn = S.alg1_update(Qi, Kj, Vj, Oi, li, mi, m.tau, rescale=False)
                        m.store("O", q0, q1, On)
                        m.store("l", q0, q1, ln)
                        m.store("m", q0, q1, mn)
    r = puzzles.check("algorithm-1", no_steps)
    assert "at i = 0, j = 1, l_0 = 5.601 but Algorithm 1 has 5.58" in r.message, r.message


def test_every_block_update_problem_moves_a_rows_max():
    """A row whose max moves at j is where alpha = e^(m_i - m_i^new) < 1: without one, leaving alpha out
    of the update (or not storing m_i) would not change the result."""
    from flashstep._judge import _inputs
    for (nq, nk, d, M, seed), i, j in puzzles._get("block-update").problems():
        q, k, v = _inputs(nq, nk, d, seed)
        t = flashstep.run(q, k, v, M=M, record=False).tiling
        s = q.astype(np.float64) @ k.T.astype(np.float64)
        rows = slice(i * t.Br, min((i + 1) * t.Br, nq))
        assert (s[rows, j * t.Bc:(j + 1) * t.Bc].max(1) > s[rows, :j * t.Bc].max(1)).any(), (nq, nk, i, j)


def test_each_attention_puzzle_has_a_problem_where_exp_overflows():
    """A solution that never subtracts a max (e^S straight, or log sum e^lse) is right on small scores;
    each puzzle has one problem whose scores (or lse) pass 709, where e^x overflows even in float64."""
    def fa2_no_max(m):
        for i in range(m.Tr):
            q0, q1 = S.rows(i, m.Br, m.nq)
            m.step("FA2fwd L4", i=i)
            with m.sram():
                Qi = m.load("Q", q0, q1).astype(np.float64)
                Oi, li = np.zeros((q1 - q0, m.d)), np.zeros(q1 - q0)
                for j in range(m.Tc):
                    k0, k1 = S.rows(j, m.Bc, m.nk)
                    if m.causal_offset is not None and k0 > q1 - 1 + m.causal_offset:
                        continue  # wholly above the diagonal
                    with m.sram():
                        Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
                        with np.errstate(over="ignore", invalid="ignore"):
                            p = np.exp(m.tau * Qi @ Kj.T)
                            if m.causal_offset is not None:
                                r, c = np.arange(q0, q1)[:, None], np.arange(k0, k1)[None, :]
                                p = np.where(c <= r + m.causal_offset, p, 0.0)
                            Oi, li = Oi + p @ Vj, li + p.sum(1)
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    m.store("O", q0, q1, Oi / li[:, None])
                    m.store("L", q0, q1, np.log(li))

    for puzzle, offset in (("fa2-order", None), ("causal", "causal")):
        def fn(m, offset=offset):
            m.causal_offset = (m.nk - m.nq) if offset else None
            fa2_no_max(m)
        r = puzzles.check(puzzle, fn)
        assert not r.passed and "scores near 800" in r.message, r.message

    def combine_no_max(m):
        for i in range(m.Tr):
            q0, q1 = S.rows(i, m.Br, m.nq)
            m.step("FD L17", i=i)
            with m.sram():
                lse = np.stack([m.load("Lp", s * m.nq + q0, s * m.nq + q1) for s in range(m.S)]).astype(np.float64)
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    Li = np.log(np.exp(lse).sum(0))
                    Oi = np.zeros((q1 - q0, m.d))
                    for s in range(m.S):
                        with m.sram():
                            Oi += np.exp(lse[s] - Li)[:, None] * m.load("Op", s * m.nq + q0, s * m.nq + q1)
                m.step("FD L19", i=i)
                m.store("O", q0, q1, Oi)
                m.step("FD L20", i=i)
                m.store("L", q0, q1, Li)
    r = puzzles.check("decode-combine", combine_no_max)
    assert not r.passed and "scores near 800" in r.message, r.message

    def online_no_max(m):
        li = 0.0
        for b0 in range(0, m.n, m.Bc):
            with m.sram(), np.errstate(over="ignore"):
                li += np.exp(m.load("x", b0, min(b0 + m.Bc, m.n)).astype(np.float64)).sum()
        for b0 in range(0, m.n, m.Bc):
            with m.sram(), np.errstate(over="ignore", invalid="ignore"):
                x = m.load("x", b0, min(b0 + m.Bc, m.n)).astype(np.float64)
                m.store("y", b0, min(b0 + m.Bc, m.n), np.exp(x) / li)
    r = puzzles.check("online-softmax", online_no_max)
    assert not r.passed and "N = 24" in r.message, r.message


def test_softmax_machines_say_their_sram():
    seen = []

    def probe(m):
        seen.append((m.n, m.M))
        S.safe_softmax(m)
    assert puzzles.check("safe-softmax", probe).passed
    assert all(M == max(n, 4) for n, M in seen)
    seen.clear()

    def probe_online(m):
        seen.append((m.Bc, m.M))
        S.online_softmax(m)
    assert puzzles.check("online-softmax", probe_online).passed
    assert seen == [(2, 2), (8, 8), (8, 8), (8, 8)]


def _nothing(m):
    """A function that moves nothing: every output is left as the puzzle placed it."""


@pytest.mark.parametrize("puzzle,message", [
    ("safe-softmax", "y was never written"),
    ("online-softmax", "y was never written"),
    ("block-update", "was never written: rows 4:8 still hold what they held before the update"),
    ("algorithm-1", "O was never written. Hint: store O_i (Alg1 L12)"),
    ("fa2-order", "L was never written"),
    ("causal", "L was never written"),
    ("backward-block", "dV was never written (rows 4:8)"),
    ("decode-combine", "L was never written"),
])
def test_an_output_never_written_is_said_so(puzzle, message):
    r = puzzles.check(puzzle, _nothing)
    assert not r.passed
    assert message in r.message, r.message
    assert "missing rescale" not in r.message and "Hint: P_ij" not in r.message


def test_the_machine_refuses_indices_that_are_not_whole_numbers():
    def half_block(m):
        m.load("Q", 0, m.Br / 2)
    assert "m.load('Q', ...): r1 must be a whole number (got 2.0)" in puzzles.check("algorithm-1", half_block).message

    def huge(m):
        m.load("Q", 0, 2**70)
    assert "m.load('Q', ...): r1 must be in" in puzzles.check("algorithm-1", huge).message

    def bool_block(m):
        m.step("Alg1 L6", j=True)
    assert "m.step: j must be a whole number (got True)" in puzzles.check("algorithm-1", bool_block).message


def test_sram_full_names_the_tile_still_held():
    """The natural loop without frees: Q_i is still bound to its variable when Q_{i+1} loads."""
    def no_frees(m):
        for j in range(m.Tc):
            k0, k1 = S.rows(j, m.Bc, m.nk)
            Kj, Vj = m.load("K", k0, k1), m.load("V", k0, k1)
            for i in range(m.Tr):
                q0, q1 = S.rows(i, m.Br, m.nq)
                Qi, Oi = m.load("Q", q0, q1), m.load("O", q0, q1)
    r = puzzles.check("algorithm-1", no_frees)
    assert "SRAM full: loading Q[4:8] (16 elements) while holding 64 would need 80 of M = 64; Q[0:4] is still " \
           "held" in r.message, r.message
    assert "m.free(tile) or a with m.sram(): block" in r.message


def test_sram_full_names_the_tiles_of_other_tensors_still_held():
    """FlashAttention-2 without m.free(Q_i): the load that overflows is of V, and the tiles to free
    are Q's, which the message names."""
    r = puzzles.check("fa2-order", S.fa2_with(free_q=False))
    assert "SRAM full: loading " in r.message and "held: Q[0:4], Q[4:8]" in r.message, r.message


def test_a_store_writes_no_more_than_sram_holds_and_takes_whole_numbers():
    """y computed whole in Python (N = 37 > M = 8) and written in one store is refused; a number
    or an integer array stores as the floats it is."""
    def whole_y(m):
        x = []
        for b0 in range(0, m.n, m.Bc):
            with m.sram():
                x.append(np.array(m.load("x", b0, min(b0 + m.Bc, m.n)), np.float64))
        x = np.concatenate(x)
        m.store("y", 0, m.n, np.exp(x - x.max()) / np.exp(x - x.max()).sum())
    r = puzzles.check("online-softmax", whole_y)
    assert "elements in one store, more than SRAM holds (M = " in r.message and "block by block" in r.message, \
        r.message

    def int_stats(m):
        S.online_softmax(m)
        m.store("l", 0, 1, 1)  # a whole number, after the right solution's own stores
        m.store("m", 0, 1, np.array([0]))
    r = puzzles.check("online-softmax", int_stats)
    assert "dtype" not in r.message and "stopped" not in r.message, r.message


def test_a_block_update_of_the_wrong_rows_says_which_rows_were_written():
    """i and j swapped: the rows of m the step is about were never written; the message says so
    and names the rows that were, instead of blaming the last store of m."""
    right = S.block_update_with()

    class Swapped:  # the machine with i and j swapped: the student's update of block (j, i)
        def __init__(self, m):
            self._m_, self.i, self.j = m, m.j, m.i

        def __getattr__(self, name):
            return getattr(self._m_, name)

    def swapped(m):
        right(Swapped(m))
    r = puzzles.check("block-update", swapped)
    assert not r.passed
    assert "was never written" in r.message and "your stores of" in r.message and "wrote rows" in r.message, r.message


def test_the_trace_carries_the_puzzles_setup(tmp_path):
    r = puzzles.check("block-update", RIGHT["block-update"])
    assert r.passed
    r.trace.save(tmp_path / "block.json")
    before = {w["tensor"]: w for w in json.loads((tmp_path / "block.json").read_text())["replay"]["hbm_before"]}
    assert sorted(before) == ["O", "l", "m"]  # Q, K, V are the problem's inputs, not a setup
    # the first problem, (i, j) = (0, 1): m as Algorithm 1 leaves it after K/V block 0
    nq, nk, d, M, seed = 8, 8, 4, 64, 1
    ref = flashstep.run(nq=nq, nk=nk, d=d, M=M, seed=seed)
    after_j0 = [w for s in ref.steps if s.j == 0 for w in s.writes if w[0] == "m"]
    want = np.zeros(nq, np.float32)
    for _, row0, rows in after_j0:
        want[row0:row0 + rows.shape[0]] = rows[:, 0]
    got = np.array([float(x) for x in before["m"]["data"]["data"]], np.float32)
    np.testing.assert_array_equal(got, want)


def test_notes_are_checked_against_the_steps_blocks():
    """A noted value is drawn where its step's blocks are: a wrong shape or an unknown name is refused
    when noted (a shape the app cannot place would otherwise reach the saved trace)."""
    def note(**values):
        def fn(m):
            m.step("FA2fwd L8", i=0, j=0)
            m.note(**values)
        return puzzles.check("fa2-order", fn).message
    assert "m.note(S=...): 7 x 3 where the step's blocks (i = 0, j = 0) make the tile 4 x 4" in \
        note(S=np.zeros((7, 3)))
    assert "m.note(m_new=...): 999 x 1 where" in note(m_new=np.zeros(999))
    assert "'Z' is not a value the trace holds" in note(Z=1)
    assert "the value must be numbers" in note(S="high")
    assert "real, not complex" in note(S=np.full((4, 4), 1j))  # was noted as 0, a ComplexWarning aside
    assert "stopped" not in note(S=np.zeros((4, 4)), m_new=np.zeros(4))


def test_a_number_stores_as_a_vector_of_one_row():
    def online(m):
        mi, li = -np.inf, 0.0
        for b0 in range(0, m.n, m.Bc):
            b1 = min(b0 + m.Bc, m.n)
            with m.sram():
                x = m.load("x", b0, b1).astype(np.float64)
                mn = max(mi, x.max())
                mi, li = mn, np.exp(mi - mn) * li + np.exp(x - mn).sum()
            m.store("m", 0, 1, mi)  # a number, not np.array([mi])
            m.store("l", 0, 1, li)
        for b0 in range(0, m.n, m.Bc):
            b1 = min(b0 + m.Bc, m.n)
            with m.sram():
                m.store("y", b0, b1, np.exp(m.load("x", b0, b1).astype(np.float64) - mi) / li)
    r = puzzles.check("online-softmax", online)
    assert r.passed, r.message
    assert (r.write_bytes, r.budget_write) == (16, 16)  # y's 4 floats; m and l are diagnostics


@pytest.mark.parametrize("puzzle,attr", [("fa2-order", "tau"), ("causal", "tau"), ("algorithm-1", "Tc"),
                                         ("block-update", "i"), ("online-softmax", "n"), ("decode-combine", "S")])
def test_the_problem_on_the_machine_is_read_only(puzzle, attr):
    """The judge reads m.tau, m.Tc, ... after the function: m.tau = 1.0 with unscaled scores passed
    fa2-order and causal (their reference was computed at the student's tau). Now any assignment
    to the problem stops the function, naming it; the right solution, run afterwards, still passes."""
    def changes_the_problem(m):
        setattr(m, attr, 1.0 if attr == "tau" else getattr(m, attr) - 1)
        RIGHT[puzzle](m)
    r = puzzles.check(puzzle, changes_the_problem)
    assert not r.passed
    assert f"your function raised AttributeError: m.{attr} is the problem's and cannot be changed" in r.message, \
        r.message
    assert puzzles.check(puzzle, RIGHT[puzzle]).passed
