"""A student's trace in the real app: `flashstep gui --trace` under Xvfb opens it, steps through
it (the state dump holds the student's HBM state), and refuses a file that is not a trace."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

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
