"""algorithm-1's second run (flashstep.puzzles): are the O_i, l_i, m_i the student loads used?

Algorithm 1 keeps nothing on chip from one K/V block j to the next: at every (i, j) it loads
O_i, l_i, m_i from HBM (Alg1 L8), updates them and stores them back. A function that loads them
(the bytes), keeps its own copy in Python across j and stores Algorithm 1's values has the
schedule's bytes, stores and result; only the data flow tells it apart. So, once a function has
passed, the judge runs it again on a machine whose loads of O, l, m hand back another valid
state: Algorithm 1's state of the same rows after as many K/V blocks, taken from the end of K
and V (the keys in reverse order). Each element's state is chosen by how many times the student
has stored that element (its version: version k holds the state after k blocks), so a block
loaded in pieces, by rows or by columns, gets the same state as one loaded whole. A function
that updates what it loads then stores, at every (i, j), Algorithm 1's update of that handed
state with the real K_j, V_j, which the judge computes with its own float64 recursion; one that
ignores its loads stores the first run's values. Only the message tells of the second run: the
bytes, SRAM and trace reported are the first run's."""
import contextlib
import io

import numpy as np

from ._judge import Machine, _Fail, _first_bad, _fmt, _run_student, _where

_STATE = ("O", "l", "m")
_SECOND_RUN = ("the judge ran your function a second time, and there every reload of O_i, l_i, m_i from HBM "
               "(j >= 1) handed you a different valid state (Algorithm 1's state of the same rows after as many "
               "K/V blocks taken from the end of K and V)")


def _update(state, q, kb, vb, tau):
    """Alg1 L9-L12 for every row at once, in float64: the state after one more K/V block."""
    o, l, m = state
    s = tau * q @ kb.T
    mt = s.max(axis=1)
    p = np.exp(s - mt[:, None])
    with np.errstate(invalid="ignore"):  # m = -inf before the first block: e^(-inf) = 0, never nan
        mn = np.maximum(m, mt)
        a, b = np.exp(m - mn), np.exp(mt - mn)
    ln = a * l + b * p.sum(axis=1)
    return ((l * a)[:, None] * o + b[:, None] * (p @ vb)) / ln[:, None], ln, mn


def _stack(states):
    """A list of (O, l, m) states as a dict of tensor -> stack over versions."""
    return {t: np.stack([st[n] for st in states]) for n, t in enumerate(_STATE)}


def _states(q, k, v, tau, Bc):
    """handed[t][k]: the state the second run hands back at version k (float32, as HBM holds it);
    expected[t][k + 1]: Algorithm 1's update of handed state k with the real K/V block k; and
    _kept_runs' states."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    nq, nk, d = q.shape[0], k.shape[0], q.shape[1]
    blocks = [(b, min(b + Bc, nk)) for b in range(0, nk, Bc)]
    start = (np.zeros((nq, d)), np.zeros(nq), np.full(nq, -np.inf))
    handed, expected, loaded = [start], [start], []
    kr, vr = k[::-1], v[::-1]
    for b0, b1 in blocks:
        loaded.append(tuple(np.asarray(a, np.float32).astype(np.float64) for a in handed[-1]))  # as loaded
        expected.append(_update(loaded[-1], q, k[b0:b1], v[b0:b1], tau))
        handed.append(_update(handed[-1], q, kr[b0:b1], vr[b0:b1], tau))
    return ({t: a[:len(blocks)].astype(np.float32) for t, a in _stack(handed).items()}, _stack(expected),
            _kept_runs(q, k, v, tau, blocks, start, loaded))


# The parts of the state a function may keep in Python rather than use what it loads: one, two or
# all three of O, l, m (all three: the first run's values).
_KEPT = (("O", "l", "m"), ("O",), ("l",), ("m",), ("O", "l"), ("O", "m"), ("l", "m"))


def _kept_runs(q, k, v, tau, blocks, start, loaded):
    """For each part of _KEPT, the states a function stores at every version when it updates that
    part from its own previous result (kept in Python) and the rest from what it loaded (loaded[n]
    at block n): keyed by the part, each a dict of tensor -> stack over versions, as `expected`."""
    runs = {}
    for kept in _KEPT:
        own = start
        states = [own]
        for (b0, b1), got in zip(blocks, loaded):
            given = tuple(own[i] if t in kept else got[i] for i, t in enumerate(_STATE))
            own = _update(given, q, k[b0:b1], v[b0:b1], tau)
            states.append(own)
        runs[kept] = _stack(states)
    return runs


class _ReloadMachine(Machine):
    """The machine of the second run: a load of O, l or m hands back, element by element, the
    state of that element's version; each store of them is recorded with the versions it replaced."""

    def __init__(self, core, handed):
        super().__init__(core)
        self._handed = handed
        self._version = {t: np.zeros(a.shape[1:], np.int64) for t, a in handed.items()}
        self.state_stores = []  # (tensor, versions of the elements before the store), in store order

    def _block(self, name, r0, shape, c0):
        """The index of a tile of `shape` at row r0, column c0 in the tensor's version array."""
        cols = (slice(c0, c0 + shape[1]),) if self._version[name].ndim == 2 and len(shape) == 2 else ()
        return (slice(r0, r0 + shape[0]),) + cols

    def load(self, name, r0, r1, c0=0, c1=None):
        tile = super().load(name, r0, r1, c0, c1)
        name = str(name)
        if name in self._handed:
            idx = self._block(name, int(r0), tile.shape, int(c0))
            version = np.minimum(self._version[name][idx], len(self._handed[name]) - 1)
            given = self._handed[name][(slice(None),) + idx]
            tile.view(np.ndarray)[...] = np.take_along_axis(given, version[None], 0)[0]
        return tile

    def store(self, name, r0, r1, tile, c0=0):
        super().store(name, r0, r1, tile, c0)
        name = str(name)
        if name in self._version:
            shape = np.asarray(tile).shape or (1,)
            idx = self._block(name, int(r0), (int(r1) - int(r0),) + shape[1:], int(c0))
            self.state_stores.append((name, self._version[name][idx].copy()))
            self._version[name][idx] += 1


def check_loads_used(fn, core, q, k, v):
    """Runs fn on core's machine (O, l, m placed as Algorithm 1's line 2 leaves them) with the
    handed states; raises _Fail at the first store that is not Algorithm 1's update of the
    state the student loaded, saying whether it is the first run's value (the loads not used)."""
    handed, expected, kept_runs = _states(q, k, v, core.tau, core.Bc)
    m = _ReloadMachine(core, handed)
    try:
        # What the function prints was shown by the first run; the second run's would repeat it.
        with contextlib.redirect_stdout(io.StringIO()):
            _run_student(fn, m)
    except _Fail as f:
        raise _Fail(f"{_SECOND_RUN}; {f}") from None
    stores = [(step, st) for step in core.steps for st in step.stores if st.tensor in handed]

    def at(st, version):  # the stored elements' index in a stack of states, after the store
        rows = np.arange(st.r0, st.r0 + version.shape[0])
        idx = (rows[:, None], st.c0 + np.arange(version.shape[1])[None, :]) if version.ndim == 2 else (rows,)
        return (np.minimum(version + 1, len(expected[st.tensor]) - 1),) + idx, rows

    def matches(states):  # every store of O, l, m equal to these states
        return all(_first_bad(np.asarray(st.data, np.float64).reshape(version.shape),
                              states[tensor][at(st, version)[0]]) is None
                   for (step, st), (tensor, version) in zip(stores, m.state_stores))

    for (step, st), (tensor, version) in zip(stores, m.state_stores):
        mine = np.asarray(st.data, np.float64).reshape(version.shape)
        index, rows = at(st, version)
        exp = expected[tensor][index]
        idx = _first_bad(mine, exp)
        if idx is None:
            continue
        j = int(version[idx])
        name = f"{tensor}_{rows[idx[0]]}" if version.ndim == 1 else f"{tensor}[{rows[idx[0]]}, {st.c0 + idx[1]}]"
        # Which part of the state the function kept in Python: the judge's own run of each choice
        # that agrees with every store it made.
        kept = next((part for part in _KEPT if matches(kept_runs[part])), None)
        if kept == _STATE:
            raise _Fail(f"the O_i, l_i, m_i you loaded at j = {j} were not used: {_SECOND_RUN}. Continuing from "
                        f"the state you loaded, Algorithm 1 stores {name} = {_fmt(exp[idx])}, but {_where(step, st)} "
                        f"stored {name} = {_fmt(mine[idx])}, the first run's value: your update used O_i, l_i, m_i kept in "
                        "Python across j. Hint: Algorithm 1 keeps nothing on chip from one j to the next: update "
                        "the O_i, l_i, m_i you load at every (i, j) (Alg1 L8), which hold what the last j stored.")
        if kept is not None:
            used = [f"{t}_i" for t in _STATE if t not in kept]
            cause = (f"your update used {' and '.join(t + '_i' for t in kept)} kept in Python across j (the "
                     f"{' and '.join(used)} you loaded were used). Hint: update all three as loaded at every (i, j) "
                     "(Alg1 L8)")
        else:
            cause = ("part of your update does not come from the O_i, l_i, m_i you loaded (one of them kept in "
                     "Python across j?)")
        raise _Fail(f"{_SECOND_RUN}; after {_where(step, st)}, {name} = {_fmt(mine[idx])} but Algorithm 1, "
                    f"continuing from the state you loaded at j = {j}, has {_fmt(exp[idx])}: {cause}.")
