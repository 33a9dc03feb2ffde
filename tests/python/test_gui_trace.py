"""A student's trace in the real app: `flashstep gui --trace` under Xvfb opens it, steps through
it (the state dump holds the student's HBM state), and refuses a file that is not a trace."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import flashstep
import solutions as S
from flashstep import puzzles

XVFB = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24"]


def gui(flashstep_bin, tmp_path, *args):
    if not shutil.which("xvfb-run"):
        pytest.fail("xvfb-run is needed for the app's tests (apt-get install xvfb xauth)")
    env = dict(os.environ, FLASHSTEP_SETTINGS=str(tmp_path / "settings.json"))
    return subprocess.run([*XVFB, flashstep_bin, "gui", *args], capture_output=True, text=True, env=env, timeout=120)


def test_student_trace_opens_and_steps(flashstep_bin, tmp_path):
    r = puzzles.check("algorithm-1", S.algorithm_1_with())
    assert r.passed
    r.trace.save(tmp_path / "student.json")
    k = 7  # L6, then L8, L9, L10, L11, L12, L13 of (i, j) = (0, 0)
    assert (r.trace.steps[k - 1].label, r.trace.steps[k - 1].i, r.trace.steps[k - 1].j) == ("Alg1 L13", 0, 0)
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "student.json"), "--step", str(k),
            "--screenshot", str(tmp_path / "shot.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["index"] == k and state["steps"] == len(r.trace.steps)
    assert (state["line"], state["i"], state["j"]) == ("Alg1 L13", 0, 0)
    assert state["hbm_read_total"] == sum(s.read_bytes for s in r.trace.steps[:k])
    stored_l = r.trace.steps[k - 1].stores[0]
    assert stored_l.tensor == "l"
    hbm_l = np.array(state["hbm"]["l"], dtype=np.float64).reshape(-1)
    np.testing.assert_array_equal(hbm_l[:4], stored_l.data)
    assert (tmp_path / "shot.png").stat().st_size > 10000


def test_steps_labelled_without_i_j_open_at_their_blocks(flashstep_bin, tmp_path):
    """"i, j default to the blocks loaded": Algorithm 1 with every m.step's i=, j= left out. Its
    compute steps were recorded at i = j = -1 and the app aborted (heap corruption) opening them."""
    r = puzzles.check("algorithm-1", S.relabelled(S.algorithm_1_with()))
    assert r.passed
    r.trace.save(tmp_path / "bare.json")
    k = next(n for n, s in enumerate(r.trace.steps) if (s.label, s.i, s.j) == ("Alg1 L9", 1, 1)) + 1
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "bare.json"), "--step", str(k),
            "--screenshot", str(tmp_path / "bare.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert (state["line"], state["i"], state["j"]) == ("Alg1 L9", 1, 1)


def test_a_file_that_is_not_a_trace_is_one_error_line(flashstep_bin, tmp_path):
    (tmp_path / "notes.json").write_text('{"hello": 1}\n')
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "notes.json"), "--screenshot", str(tmp_path / "x.png"))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flashstep: error: ") and "not a flashstep trace" in lines[0]
    assert not (tmp_path / "x.png").exists()


def _hbm(state, name):
    """A tensor of the app's state dump as float64 (-inf, inf, nan are strings there)."""
    return np.array([[float(x) for x in row] for row in state["hbm"][name]], dtype=np.float64)


def test_the_puzzles_setup_is_in_hbm_from_the_first_step(flashstep_bin, tmp_path):
    # Algorithm 1: O = 0, l = 0, m = -inf as its line 2 leaves them, before any step of the student's.
    r = puzzles.check("algorithm-1", S.algorithm_1_with())
    assert r.passed
    r.trace.save(tmp_path / "alg1.json")
    before = json.loads((tmp_path / "alg1.json").read_text())["replay"]["hbm_before"]
    assert sorted(w["tensor"] for w in before) == ["O", "l", "m"]
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "alg1.json"), "--step", "0",
            "--screenshot", str(tmp_path / "alg1.png"), "--dump-state", str(tmp_path / "alg1-state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "alg1-state.json").read_text())
    assert state["index"] == 0
    nq, d = state["problem"]["nq"], state["problem"]["d"]
    np.testing.assert_array_equal(_hbm(state, "O"), np.zeros((nq, d)))
    np.testing.assert_array_equal(_hbm(state, "l"), np.zeros((nq, 1)))
    np.testing.assert_array_equal(_hbm(state, "m"), np.full((nq, 1), -np.inf))
    # the student's steps write O, l, m: the trace is the whole schedule (bar line 2), compared as it is
    assert not state["whole_schedule"]
    # block-update's setup (O, l, m after the blocks before j) is checked in its file by
    # test_puzzles.py; the app reads it by the same code as this one.


def test_decode_combine_opens_with_its_partials(flashstep_bin, tmp_path):
    r = puzzles.check("decode-combine", S.decode_combine_with())
    assert r.passed
    r.trace.save(tmp_path / "combine.json")
    doc = json.loads((tmp_path / "combine.json").read_text())
    assert {"O^(s)", "lse^(s)"} <= {w["tensor"] for w in doc["replay"]["hbm_before"]}  # core's names of Op, Lp
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "combine.json"), "--step", "1",
            "--screenshot", str(tmp_path / "combine.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["line"] == r.trace.steps[0].label
    assert "20" in state["problem"]["mask"], state["problem"]["mask"]  # the first problem's kv_len = 20
    # The memory panel's extra-traffic table: decode's column is core's whole decode run of the
    # problem (Nq = 4, Nk = 37, d = 8, M = 128, S = 3, kv_len = 20), not the combine's bytes the
    # trace holds
    q, k, v = puzzles._inputs(4, 37, 8, 7)
    whole = flashstep._core.run(q, k, v, schedule="decode", M=128, splits=3, kv_len=20, record=False)
    extra = state["decode_extra"]
    rows = {row["name"]: row for row in extra["rows"]}
    assert state["whole_schedule"]
    assert rows["whole forward"]["shown"] == whole.hbm_read_bytes + whole.hbm_write_bytes
    assert rows["whole forward"]["shown"] > r.read_bytes + r.write_bytes  # the combine's alone
    assert rows["O^(s), lse^(s) written"]["shown"] == 3 * 4 * (8 + 1) * 4 == extra["partials"] // 2
    assert rows["O^(s), lse^(s) read"]["shown"] == r.budget_read  # the combine reads the partials
    assert rows["Q read"]["shown"] > rows["Q read"]["contrast"] > 0


# [SECTION] the softmax puzzles: a row's trace, beside core's lesson

def _running_stats(x, blocks):
    """m, l after each block, in float64 NumPy (an oracle apart from core's lesson)."""
    out, m, l = [], -np.inf, 0.0
    for b0, b1 in blocks:
        mt = x[b0:b1].max()
        lt = np.exp(x[b0:b1] - mt).sum()
        mn = max(m, mt)
        l = np.exp(m - mn) * l + np.exp(mt - mn) * lt
        m = mn
        out.append((m, l))
    return out


def test_online_softmax_trace_steps_block_by_block(flashstep_bin, tmp_path):
    r = puzzles.check("online-softmax", S.online_softmax)
    assert r.passed
    r.trace.save(tmp_path / "row.json")
    doc = json.loads((tmp_path / "row.json").read_text())
    assert doc["replay"]["kind"] == "softmax-row" and (doc["row"]["n"], doc["row"]["block"]) == (4, 2)
    x = np.array(doc["replay"]["x"], dtype=np.float64)  # the lesson's [1, 2, 3, 4]
    k = 2  # pass 1 over both blocks: m and l stored after each
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "row.json"), "--step", str(k),
            "--screenshot", str(tmp_path / "row.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert (state["kind"], state["index"], state["steps"]) == ("softmax-row", k, len(r.trace.steps))
    assert state["line"] == r.trace.steps[k - 1].label == "block 1"
    assert state["hbm_read_total"] == sum(s.read_bytes for s in r.trace.steps[:k]) == 16
    row = state["row"]
    # the memory panel's totals are the judge's: x and y, not the m, l stored after each block
    # (diagnostics), which the file's totals hold
    judged = row["judged"]
    assert (judged["read_so_far"], judged["written_so_far"]) == (16, 0) and state["hbm_write_total"] == 16
    assert (judged["read_run"], judged["written_run"]) == (r.read_bytes, r.write_bytes) == (32, 16)
    assert judged["diagnostic_run"] == 16 and row["tensor_written"]["m"] == 8
    # the student's m, l after each block are the values the student stored, in order
    stored = {"m": [], "l": []}
    for s in r.trace.steps[:k]:
        for st in s.stores:
            stored[st.tensor].append(float(st.data[0]))
    assert [b["student"]["m"] for b in row["blocks"]] == stored["m"]
    assert [b["student"]["l"] for b in row["blocks"]] == stored["l"]
    # the lesson's beside them: core's, checked here against NumPy in float64
    expected = _running_stats(x, [(b["begin"], b["end"]) for b in row["blocks"]])
    for b, (m, l) in zip(row["blocks"], expected):
        assert b["reached"] and b["lesson"]["m_new"] == m
        assert b["lesson"]["l_new"] == pytest.approx(l, rel=1e-14)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(row["lesson_softmax"], e / e.sum(), rtol=1e-14)
    assert row["x_loaded"] == ["before", "before", "now", "now"] and row["y_written"] == ["no"] * 4
    assert (tmp_path / "row.png").stat().st_size > 10000


def test_safe_softmax_trace_shows_y_beside_the_softmax(flashstep_bin, tmp_path):
    r = puzzles.check("safe-softmax", S.safe_softmax)
    assert r.passed
    r.trace.save(tmp_path / "safe.json")
    doc = json.loads((tmp_path / "safe.json").read_text())
    x = np.array(doc["replay"]["x"], dtype=np.float64)  # 50 values near 1000, as float32
    assert doc["row"]["block"] == x.size == 50
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "safe.json"), "--step", "1",
            "--screenshot", str(tmp_path / "safe.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    row = json.loads((tmp_path / "state.json").read_text())["row"]
    np.testing.assert_array_equal(np.array(row["hbm"]["y"], dtype=np.float64), r.trace.steps[0].stores[0].data)
    assert row["y_written"] == ["now"] * 50
    e = np.exp(x - x.max())
    np.testing.assert_allclose(row["lesson_softmax"], e / e.sum(), rtol=1e-12)
    (block,) = row["blocks"]
    assert block["lesson"]["m_new"] == x.max() and block["lesson"]["l_new"] == pytest.approx(e.sum(), rel=1e-14)
    assert block["student"] == {"m": None, "l": None}  # safe-softmax stores y only


def test_a_malformed_row_trace_is_one_error_line(flashstep_bin, tmp_path):
    r = puzzles.check("online-softmax", S.online_softmax)
    r.trace.save(tmp_path / "good.json")
    good = json.loads((tmp_path / "good.json").read_text())
    bytes_off = json.loads(json.dumps(good))
    bytes_off["steps"][1]["hbm_read_bytes"] += 4
    outside = json.loads(json.dumps(good))
    outside["replay"]["steps"][0]["stores"][0]["row0"] = 1  # m holds one value
    cases = [(bytes_off, "steps[1].hbm_read_bytes is 12 where the step's loads move 8 bytes"),
             (outside, "replay.steps[0].stores[0].row0 is 1, outside m (1 value)")]
    for n, (doc, expect) in enumerate(cases):
        path = tmp_path / f"bad{n}.json"
        path.write_text(json.dumps(doc))
        p = gui(flashstep_bin, tmp_path, "--trace", str(path), "--screenshot", str(tmp_path / "x.png"))
        assert p.returncode == 2
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("flashstep: error: ") and expect in lines[0], lines
    assert not (tmp_path / "x.png").exists()


# [SECTION] backward-block: the student's FA2b steps after core's forward

def test_backward_block_trace_opens_in_the_backward_view(flashstep_bin, tmp_path):
    r = puzzles.check("backward-block", S.backward_block_with())
    assert r.passed
    r.trace.save(tmp_path / "bwd.json")
    doc = json.loads((tmp_path / "bwd.json").read_text())
    first = doc["phases"]["backward"]["first_step"]
    assert doc["problem"]["backward"] is True and doc["problem"]["schedule"] == "fa2"
    assert first > 0 and all(s["label"].startswith("FA2fwd") for s in doc["steps"][:first])  # core's forward
    assert [s["label"] for s in doc["steps"][first:]] == [s.label for s in r.trace.steps]
    # the student's dV~_j after its first Q block (FA2b L12 at i = 0): half the accumulation
    at = next(n for n, s in enumerate(r.trace.steps) if s.label == "FA2b L12" and s.i == 0)
    j = r.trace.steps[at].j
    k = first + at + 1
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "bwd.json"), "--step", str(k),
            "--screenshot", str(tmp_path / "bwd.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["backward"]["in_backward"] and state["backward"]["first_step"] == first
    assert (state["line"], state["i"], state["j"]) == ("FA2b L12", 0, j)
    forward_read = doc["phases"]["forward"]["hbm_read_bytes"]
    assert state["hbm_read_total"] == forward_read + sum(s.read_bytes for s in r.trace.steps[:at + 1])
    chip = state["backward"]["chip"]["dV"]
    assert chip["step"] == k - 1
    dv = np.array(chip["tile"], dtype=np.float64)
    np.testing.assert_array_equal(dv, _mat(doc["replay"]["steps"][k - 1]["tile"]))  # what the student noted
    # ... which is P_0j^T dO_0 with P_0j = exp(tau Q_0 K_j^T - L_0), in NumPy float64
    rp, pr = doc["replay"], doc["problem"]
    q, kk, do, lse = _mat(rp["Q"]), _mat(rp["K"]), _mat(rp["dO"]), np.array(rp["lse"], dtype=np.float64)
    br, bc = pr["Br"], pr["Bc"]
    P = np.exp(pr["scale"] * q[:br] @ kk[j * bc:(j + 1) * bc].T - lse[:br, None])
    np.testing.assert_allclose(dv, P.T @ do[:br], rtol=1e-5, atol=1e-6)
    assert state["hbm"]["dK"] is not None and not np.any(np.array(state["hbm"]["dK"], dtype=np.float64))  # not yet


def _mat(m):
    """A replay matrix ({"rows", "cols", "data"}) as float64."""
    return np.array(m["data"], dtype=np.float64).reshape(m["rows"], m["cols"])


def test_a_backward_run_from_the_module_opens_at_its_backward(flashstep_bin, tmp_path):
    # flashstep.run(backward=True) saves both passes; the app steps into the backward, and at the
    # last step its HBM holds the run's own dQ, dK, dV.
    r = flashstep.run(n=12, d=4, M=64, schedule="fa2", backward=True)
    r.save_trace(tmp_path / "bwd.json")
    last = len(r.steps)
    p = gui(flashstep_bin, tmp_path, "--trace", str(tmp_path / "bwd.json"), "--step", str(last),
            "--screenshot", str(tmp_path / "shot.png"), "--dump-state", str(tmp_path / "state.json"))
    assert p.returncode == 0, p.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["index"] == last and state["line"].startswith("FA2b")
    for name, grad in (("dQ", r.dq), ("dK", r.dk), ("dV", r.dv)):
        np.testing.assert_array_equal(_hbm(state, name), grad.astype(np.float64), err_msg=name)
