"""The student's run as a trace: the loop indices its steps get, what saving it refuses (a step the
app could not place, a line of another algorithm, a save while the function runs), and the
machine's refusals of bad step arguments, paths and lesson sizes."""
import json
import os

import numpy as np
import pytest

import flashstep
import solutions as S
from flashstep import puzzles
from test_puzzles import RIGHT as ALL_RIGHT

# The attention puzzles' right solutions (test_puzzles.py's): their traces are attention traces.
RIGHT = {pid: fn for pid, fn in ALL_RIGHT.items() if pid not in ("safe-softmax", "online-softmax")}


def _ij(result):
    return [(s.label, s.i, s.j) for s in result.trace.steps]


# [SECTION] i, j default to the blocks loaded

@pytest.mark.parametrize("puzzle", sorted(RIGHT))
def test_steps_without_i_j_get_the_blocks_they_would_name(puzzle, tmp_path):
    """A compute step without i=, j= (Alg1 L9 after the loads of its (i, j)) takes the blocks loaded
    or named last, where its line has that loop: the same indices as the solution that names them
    (FA2fwd L14, after the j loop, gets no j; decode's partials give their Q block)."""
    named = puzzles.check(puzzle, RIGHT[puzzle])
    bare = puzzles.check(puzzle, S.relabelled(RIGHT[puzzle]))
    assert bare.passed, bare.message
    assert _ij(bare) == _ij(named)
    bare.trace.save(tmp_path / "t.json")  # the app places every step


def test_the_audits_algorithm_1_steps_at_core_s_indices(tmp_path):
    """Labels without i=, j= (docs/python.md: "i, j default to the blocks loaded") record core's own
    (i, j) for every line: the app indexed its tiles with i = j = -1 and aborted."""
    r = puzzles.check("algorithm-1", S.relabelled(RIGHT["algorithm-1"]))
    assert r.passed, r.message
    r.trace.save(tmp_path / "t.json")
    p = json.loads((tmp_path / "t.json").read_text())["problem"]
    core = flashstep.run(nq=p["nq"], nk=p["nk"], d=p["d"], M=p["M"], schedule="fa1")
    assert {(s.label, s.i, s.j) for s in core.steps} >= set(_ij(r))
    assert ("Alg1 L9", 0, 1) in _ij(r)


def test_a_step_the_app_cannot_place_is_refused_when_saving(tmp_path):
    def scores_first(m):  # no block loaded or named yet, and a tile noted there
        m.step("Alg1 L9")
        m.note(S=np.ones((3, 5)))
        RIGHT["algorithm-1"](m)
    r = puzzles.check("algorithm-1", scores_first)
    assert r.passed, r.message
    with pytest.raises(ValueError, match=r"^step 0 \('Alg1 L9'\) has i = -1, j = -1, but Alg1 L9 \(scores\) works on "
                                         r"a block pair \(i, j\): name its blocks, m.step\(label, i=..., j=...\)"):
        r.trace.save(tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


# [SECTION] the puzzle's own listing

# FlashAttention-2's lines as the audit's student relabelled them, with Algorithm 1's.
AS_ALG1 = {"FA2fwd L4": "Alg1 L8", "FA2fwd L7": "Alg1 L6", "FA2fwd L12": "Alg1 L12", "FA2fwd L14": "Alg1 L12",
           "FA2fwd L15": "Alg1 L13"}


@pytest.mark.parametrize("label, listing", [
    (AS_ALG1.get, "Algorithm 1 (FlashAttention)"),
    (lambda s: "FD L18", "Flash-decoding"),
])
def test_labels_of_another_algorithm_are_refused_when_saving(label, listing, tmp_path):
    """fa2-order labelled with Algorithm 1's or flash-decoding's lines passes the judge (the labels
    are the student's), but its trace would show one algorithm's sentence beside another's listing."""
    r = puzzles.check("fa2-order", S.relabelled(RIGHT["fa2-order"], label))
    assert r.passed, r.message
    with pytest.raises(ValueError) as e:
        r.trace.save(tmp_path / "t.json")
    first = label("FA2fwd L4")
    assert str(e.value).startswith(f"step 0 is labelled '{first}', a line of {listing}")
    assert "this puzzle's run is FlashAttention-2 (Dao 2023, Algorithm 1): label its steps with that listing's " \
           "lines (\"FA2fwd L4\" .. \"FA2fwd L15\")" in str(e.value)
    assert not (tmp_path / "t.json").exists()


# [SECTION] sealed while the function runs

@pytest.mark.parametrize("puzzle", ["fa2-order", "online-softmax"])
def test_the_trace_is_not_saved_while_the_function_runs(puzzle, tmp_path):
    """The trace holds the inputs (Q, K, V; a softmax row's x): written from inside the function, it
    would be a read of HBM that no byte counts, as peek is."""
    path = tmp_path / "leak.json"

    def leaks(m):
        m._m.save_trace(str(path))
    r = puzzles.check(puzzle, leaks)
    assert not r.passed
    assert "your function stopped: save_trace while your function runs: the trace holds the puzzle's inputs" \
        in r.message, r.message
    assert not path.exists()
    r.trace.save(path)  # afterwards, from the result: allowed
    assert path.exists()


# [SECTION] bad arguments: one clear error

@pytest.mark.parametrize("kwargs, message", [
    ({"i": -5}, "m.step('Alg1 L9', i=-5): i is a Q block's index, 0 .. 1"),
    ({"i": 2}, "m.step('Alg1 L9', i=2): i is a Q block's index, 0 .. 1"),
    ({"j": 10**6}, "m.step('Alg1 L9', j=1000000): j is a K/V block's index, 0 .. 1"),
    ({"j": -1}, "m.step('Alg1 L9', j=-1): j is a K/V block's index, 0 .. 1"),
])
def test_step_indices_outside_the_tiling_are_refused(kwargs, message):
    r = puzzles.check("algorithm-1", lambda m: m.step("Alg1 L9", **kwargs))
    assert message in r.message, r.message


@pytest.mark.parametrize("label", [None, 9, b"Alg1 L9"])
def test_a_step_label_must_be_text(label):
    r = puzzles.check("algorithm-1", lambda m: m.step(label))
    assert f"m.step: the label must be a str, such as \"Alg1 L9\" (got {label!r})" in r.message, r.message


@pytest.mark.parametrize("path", [123, None, 1.5])
def test_a_trace_is_saved_to_a_path_only(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = puzzles.check("algorithm-1", RIGHT["algorithm-1"])
    with pytest.raises(ValueError, match="a path must be a str or os.PathLike"):
        r.trace.save(path)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["t.json\0", "t\0.json"])
def test_a_path_with_a_nul_is_refused_saying_so(name, tmp_path):
    """The error named the path, which ended at the NUL, and said nothing else ("ValueError: .../t.json")."""
    for save in (puzzles.check("safe-softmax", ALL_RIGHT["safe-softmax"]).trace.save,
                 flashstep.run(n=8, d=4, M=64).save_trace):
        with pytest.raises(ValueError, match=r"a path cannot hold a NUL character \(\\0 at character"):
            save(str(tmp_path / name))
    assert os.listdir(tmp_path) == []


def test_the_lesson_takes_at_most_a_row_trace_s_length():
    assert len(flashstep.lesson_softmax(np.ones(2**20), 2**12).blocks) == 256
    for n in (2**20 + 1, 10**8):
        with pytest.raises(ValueError, match=rf"^the lesson takes at most 1048576 values \(got {n}\)$"):
            flashstep.lesson_softmax(np.ones(n, np.float32), 2)
    with pytest.raises(ValueError, match=r"^block must be at most 268435456 \(got 268435457\)$"):
        flashstep.lesson_softmax([1, 2], 2**28 + 1)
