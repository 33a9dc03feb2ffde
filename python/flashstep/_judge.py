"""The machine a puzzle hands the student's function, and the judge's helpers (flashstep.puzzles
holds the puzzles themselves): tiles move between HBM and SRAM only through Machine, whose bytes
core's memory model counts (python/student_machine.h); the helpers compare a student's outputs,
bytes and stored state with core's reference and the reference schedule's trace."""
import contextlib

import numpy as np

from . import _core, _whole

ATOL = 1e-4  # |yours - reference| <= ATOL + RTOL |reference|, element by element
RTOL = 1e-4


# [SECTION] the machine handed to the student's function

def _index(value, what):
    """A whole number for a row, column or block index (int, NumPy integer); a float or a bool is
    a ValueError, never rounded quietly. The bounds keep it inside core's int64."""
    return _whole(value, what, -2**62, 2**62)


class _TileState:
    def __init__(self, name):
        self.name, self.freed = name, False


def _plain(x):
    """x with every tile in it (a tuple or list of them too) as a plain array, each checked."""
    if isinstance(x, _Tile):
        x._check()
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(e) for e in x)
    return x


class _Tile(np.ndarray):
    """What m.load returns: a NumPy array of the tile, usable as any other while the tile is in
    SRAM. Once it is freed (m.free, or the end of its `with m.sram():` block), using it, a view of
    it or a copy made by its own methods (tile.copy(), tile.T) is a ValueError naming the tile:
    the data has left the chip, and the algorithm loads it again where it needs it. What NumPy
    computes from a tile (tile @ x, np.exp(tile), tile.max()) is a plain array, the student's own."""

    def __array_finalize__(self, obj):
        self._state = getattr(obj, "_state", None)

    def _check(self):
        st = self._state
        if st is not None and st.freed:
            raise ValueError(f"{st.name} was used after it left SRAM (freed by m.free or at the end of the "
                             "`with m.sram():` block that loaded it): load it again where the algorithm does")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        return getattr(ufunc, method)(*_plain(inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})

    def __getitem__(self, key):
        self._check()
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self._check()
        super().__setitem__(key, value)

    def __float__(self):
        self._check()
        return super().__float__()

    def __repr__(self):
        return f"<{self._state.name}: freed>" if self._state is not None and self._state.freed else super().__repr__()


class Machine:
    """The simulated machine of one problem (see the module's text). A tile stays in SRAM until
    it is freed: by m.free(tile), or at the end of the `with m.sram():` block that loaded it.
    Dropping or copying the array frees nothing: a copy (np.array(tile), tile.astype(...)) is
    the student's own, and the tile it came from is still charged to M."""

    def __init__(self, core, **extra):
        self._m = core
        self._held = {}     # tile id -> the array m.load returned (m.free finds it by identity)
        self._scopes = []
        self._order = []    # ("load" | "store" | "free", tensor, r0, r1) in the order the student made them
        # The problem (nq, ..., tau, and per puzzle n, i, j, S) is read-only: the judge reads it after
        # the function has run (the reference's tau, the blocks expected), so m.tau = 1.0 in a
        # solution would otherwise judge unscaled scores against an unscaled reference, and pass.
        self._problem = {name: getattr(core, name) for name in ("nq", "nk", "d", "M", "Br", "Bc", "Tr", "Tc", "tau")}
        self._problem.update(extra)

    def __getattr__(self, name):  # only for names not found the usual way: the problem's
        problem = self.__dict__.get("_problem", {})
        if name in problem:
            return problem[name]
        raise AttributeError(f"the machine has no attribute '{name}' (the problem: {', '.join(problem)})")

    def __setattr__(self, name, value):
        if name in self.__dict__.get("_problem", ()):
            raise AttributeError(f"m.{name} is the problem's and cannot be changed (the judge reads it too): keep "
                                 f"another value in a variable of your own ({name} = ...)")
        object.__setattr__(self, name, value)

    def load(self, name, r0, r1, c0=0, c1=None):
        """Rows [r0, r1) and columns [c0, c1) of HBM tensor `name` into SRAM: a NumPy tile."""
        where = f"m.load('{name}', ...)"
        r0, r1 = _index(r0, where + ": r0"), _index(r1, where + ": r1")
        tile_id, tile = self._m.load(str(name), r0, r1, _index(c0, where + ": c0"),
                                     -1 if c1 is None else _index(c1, where + ": c1"))
        self._order.append(("load", str(name), r0, r1))
        tile = tile.view(_Tile)
        tile._state = _TileState(f"{name}[{r0}:{r1}]")
        self._held[tile_id] = tile
        if self._scopes:
            self._scopes[-1].append(tile_id)
        return tile

    def _release(self, tile_id):
        tile = self._held.pop(tile_id, None)
        if tile is not None:
            self._m.free(tile_id)
            self._order.append(("free", tile._state.name, 0, 0))
            tile._state.freed = True
            # The memory too: a plain view taken of it (np.asarray) reads NaN from now on.
            base = tile.view(np.ndarray)
            if base.flags.writeable:
                base[...] = np.nan
                base.flags.writeable = False

    def store(self, name, r0, r1, tile, c0=0):
        """Writes `tile` to rows [r0, r1) of HBM tensor `name` (from column c0)."""
        where = f"m.store('{name}', ...)"
        if isinstance(tile, _Tile):
            tile._check()
        tile = np.asarray(tile)
        if tile.dtype.kind in "iu":  # whole numbers (li = 0) as the floats they are
            tile = tile.astype(np.float64)
        if tile.ndim == 0:  # one number: a vector of one row (m.store("m", 0, 1, mi))
            tile = tile.reshape(1)
        r0, r1 = _index(r0, where + ": r0"), _index(r1, where + ": r1")
        self._m.store(str(name), r0, r1, tile, _index(c0, where + ": c0"))
        self._order.append(("store", str(name), r0, r1))

    def free(self, tile):
        """Frees a tile that m.load returned (the very array, not a slice or a copy of it)."""
        for tile_id, held in self._held.items():
            if held is tile:
                self._release(tile_id)
                return
        state = getattr(tile, "_state", None) if isinstance(tile, _Tile) else None
        if state is not None and state.freed:  # the starter's m.free(Kj) kept after a `with` block that freed Kj
            raise ValueError(f"m.free({state.name}): this tile has already left SRAM (freed by m.free or at the end "
                             "of the `with m.sram():` block that loaded it): free each tile once, one way or the other")
        raise ValueError("m.free: this array is not a tile held in SRAM (pass the array m.load returned, not a "
                         "copy such as tile.astype(...); or load it inside a `with m.sram():` block)")

    @contextlib.contextmanager
    def sram(self):
        """`with m.sram():` frees, at its end, every tile loaded inside it and not yet freed."""
        self._scopes.append([])
        try:
            yield self
        finally:
            for tile_id in self._scopes.pop():
                self._release(tile_id)

    def note(self, **values):
        """Shows on-chip values to the trace (no HBM traffic), so that the app draws them as it
        draws the built-in schedules': S= or P= (the step's score tile, Br x Bc) and the row
        statistics m_tilde=, l_tilde=, m_old=, l_old=, m_new=, l_new=, alpha=, beta=; in a
        backward, the tile of the step's line (S, P, dP, dS, or the accumulators dV, dK) and D=."""
        for name, value in values.items():
            try:
                value = np.asarray(value)
                if value.dtype.kind not in "biuf":  # complex would lose its imaginary part in the cast
                    raise TypeError(value.dtype)
                value = np.atleast_1d(value.astype(np.float64))
            except (TypeError, ValueError):
                raise ValueError(f"m.note({name}=...): the value must be numbers (a NumPy array or a number; real, "
                                 "not complex)") from None
            self._m.note(name, value)

    def step(self, label, i=None, j=None):
        """Names the pseudocode line the following loads, stores and work belong to ("Alg1 L9").
        i, j: the loop indices (Q block, K/V block); left out, those of the blocks the step
        loads, else of the last blocks loaded or named."""
        if not isinstance(label, str):
            raise ValueError(f"m.step: the label must be a str, such as \"Alg1 L9\" (got {label!r})")
        i = None if i is None else _index(i, "m.step: i")
        j = None if j is None else _index(j, "m.step: j")
        self._m.step(label, i, j)


class StudentTrace:
    """Your run: .steps (label, i, j, read_bytes, write_bytes, sram_bytes, stores), and
    .save(path) to open it with `flashstep gui --trace path`."""

    def __init__(self, core):
        self._m = core
        self.steps = core.steps

    def save(self, path):
        """Writes the trace as `flashstep gui --trace` reads it: an attention puzzle's steps must be
        labelled with core's lines (backward-block's follow core's own forward of the problem); a
        softmax puzzle's row keeps your labels (docs/python.md, "The student's run in the app").
        path: a str or os.PathLike, as for flashstep.run's save_trace."""
        self._m.save_trace(path)


class CheckResult:
    """What check() returns: passed, message, bytes against the budget, peak SRAM, trace. The
    numbers are those of the problem the message is about (the first, when all passed)."""

    def __init__(self, passed, message, machine=None, budget=(0, 0), problem="", diagnostics=()):
        self.passed = passed
        self.message = message
        self.problem = problem
        core = machine._m if machine is not None else None
        self.read_bytes = _judged_bytes(machine, "read", diagnostics) if core else 0
        self.write_bytes = _judged_bytes(machine, "written", diagnostics) if core else 0
        self.budget_read, self.budget_write = budget
        self.peak_sram = core.peak_charged_bytes if core else 0
        self.trace = StudentTrace(core) if core else None

    def __bool__(self):
        return self.passed

    def __repr__(self):
        return (f"CheckResult(passed={self.passed}, read {self.read_bytes}/{self.budget_read} B, "
                f"write {self.write_bytes}/{self.budget_write} B, peak SRAM {self.peak_sram} B)\n{self.message}")


# [SECTION] judging helpers

class _Fail(Exception):
    pass


def _fmt(x):
    return f"{x:.4g}" if np.isfinite(x) else str(x)


def _close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):  # inf - inf is nan, not close: no warning for the student to read
        return both_inf | (np.abs(a - b) <= ATOL + RTOL * np.abs(np.where(np.isinf(b), 0, b)))


def _first_bad(a, b):
    """Index of the first element where a and b differ beyond the tolerance (None: all agree)."""
    bad = ~_close(a, b)
    if not bad.any():
        return None
    return np.unravel_index(int(np.argmax(bad)), bad.shape)


def _where(step, at=None):
    """'your step 'Alg1 L13' at i = 0, j = 1': the step's label and the blocks of `at` (a store,
    whose i, j are those of the moment it happened), else of the step."""
    at = at or step
    parts = [f"your step '{step.label}'"]
    if at.i >= 0:
        parts.append(f"i = {at.i}")
    if at.j >= 0:
        parts.append(f"j = {at.j}")
    return parts[0] + (" at " + ", ".join(parts[1:]) if len(parts) > 1 else "")


def _elem_name(tensor, r0, idx, vector):
    """'l_5' for row 5 of a vector, 'O[5, 2]' for a matrix element."""
    row = r0 + int(idx[0])
    return f"{tensor}_{row}" if vector else f"{tensor}[{row}, {int(idx[1])}]"


def _check_output(machine, name, expected, what):
    """The output tensor `name` in HBM against `expected` (float64)."""
    got = machine._m.peek(name)
    idx = _first_bad(got, np.asarray(expected).reshape(got.shape))
    if idx is not None:
        exp = np.asarray(expected).reshape(got.shape)
        label = f"{name}[{', '.join(str(int(k)) for k in idx)}]"
        raise _Fail(f"{label} = {_fmt(got[idx])} but {what} has {_fmt(exp[idx])}")


def _judged_bytes(machine, kind, diagnostics=()):
    """The bytes read or written, less those of the tensors a puzzle keeps as diagnostics
    (online-softmax's m and l after each block: shown in the trace, not judged). The judge names
    them; nothing the student's function sets changes them."""
    core = machine._m
    total, per = (core.read_bytes, core.tensor_read) if kind == "read" else (core.write_bytes, core.tensor_written)
    return total - sum(per(t) for t in diagnostics)


def _check_written_in_own_block(machine, rows_of, outputs, why, period=None):
    """Each store of an output (O, L) writes rows of the Q block (m.Br rows) of the last load
    from `rows_of` (Q; or decode's stacked partials, whose row s Nq + r is Q row r: period Nq):
    the block's result leaves the chip before the next block comes. Kept on chip (in Python) and
    written later, finished blocks would hold SRAM the tiling does not have, which neither the
    bytes nor the values show. A block loaded in pieces is still its block."""
    last, loaded = None, None
    for kind, tensor, r0, r1 in machine._order:
        if kind == "load" and tensor in rows_of:
            b = (r0 % period if period else r0) // machine.Br
            last, loaded = (b * machine.Br, min((b + 1) * machine.Br, machine.nq)), f"{tensor}[{r0}:{r1}]"
        elif kind == "store" and tensor in outputs and (last is None or r0 < last[0] or r1 > last[1]):
            after = (f"after {loaded} (Q block {last[0]}:{last[1]}) was loaded" if last else
                     f"before any {' or '.join(rows_of)} block was loaded")
            raise _Fail(f"{tensor}[{r0}:{r1}] was stored {after}: {why}")


def _check_budget(machine, budget, per_tensor, teaches, hints=None, diagnostics=()):
    """Bytes against the budget, which is exact: the schedule's own bytes, neither more (a tile
    loaded twice, an output written at every j) nor fewer (a tile kept in Python after it left
    SRAM, a step of the schedule left out). Off it, by how much and which tensor (with
    hints[(tensor, kind)] or hints[(tensor, kind + " under")] for the common mistake behind it)."""
    core = machine._m
    for kind, limit, method in (("read", budget[0], core.tensor_read), ("written", budget[1], core.tensor_written)):
        used = _judged_bytes(machine, kind, diagnostics)
        verb = "read" if kind == "read" else "wrote"
        # Each tensor's bytes, not only the total: reading O twice in place of Q matches the sum.
        mine = {tensor: method(tensor) for tensor in per_tensor}
        allowed = {tensor: (r if kind == "read" else w) for tensor, (r, w) in per_tensor.items()}
        if used == limit and mine == allowed:
            continue
        over = used > limit or (used == limit and any(mine[t] > allowed[t] for t in per_tensor))
        off = []
        for tensor in per_tensor:
            if mine[tensor] == allowed[tensor]:
                continue
            off.append(f"{tensor} {kind} {mine[tensor]} B where {teaches} {verb} {allowed[tensor]} B")
            hint = (hints or {}).get((tensor, kind if mine[tensor] > allowed[tensor] else kind + " under"))
            if hint:
                off[-1] += ". " + hint
        if used == limit:
            text = (f"{kind} {used} B, {teaches}'s total, but not from the tensors it {verb}: " + "; ".join(off))
        else:
            text = (f"{abs(used - limit)} B {kind} {'over' if over else 'under'} the budget ({used} B against {limit} B, "
                    f"{teaches}'s bytes): " + ("; ".join(off) if off else "spread over several tensors"))
        if not over:
            text += (f". The budget is exact: {teaches} loads each tile from HBM where it needs it (a copy kept "
                     "in Python after the tile left SRAM is not on chip)" if kind == "read" else
                     f". The budget is exact: store each result where {teaches} stores it")
        raise _Fail(text)


class _Puzzle:
    id = ""
    title = ""
    statement = ""
    starter = ""

    def problems(self):
        raise NotImplementedError

    def judge(self, fn, setup):
        raise NotImplementedError


def _core_machine(q, k, v, M, causal=False, capacity=0, inputs=True, schedule="fa1", splits=0, kv_len=-1):
    """core's machine for the problem q, k, v (tau = 1/sqrt(d), as the CLI's default); with
    inputs, Q, K, V placed in its HBM."""
    q, k, v = (np.ascontiguousarray(a, np.float32) for a in (q, k, v))
    core = _core.StudentMachine(q, k, v, M=M, scale=1.0 / np.sqrt(q.shape[1]), causal=causal, capacity=capacity,
                                schedule=schedule, splits=splits, kv_len=kv_len)
    if inputs:
        for name, a in (("Q", q), ("K", k), ("V", v)):
            core.put(name, a)
    return core


def _run_student(fn, machine):
    """Runs fn(machine) with the machine sealed: while it runs, HBM moves only through m.load and
    m.store (the judge's put and peek refuse), so that every byte the function moves is counted."""
    token = machine._m.seal()
    try:
        fn(machine)
    except ValueError as e:  # the machine refused something: say what
        raise _Fail(f"your function stopped: {e}") from None
    except Exception as e:  # noqa: BLE001 (the student's own error, reported, not raised)
        raise _Fail(f"your function raised {type(e).__name__}: {e}") from None
    finally:
        if not machine._m.sealed:
            raise _Fail("your function unsealed the machine: HBM moves only through m.load and m.store") from None
        machine._m.unseal(token)


def _inputs(nq, nk, d, seed, offset=0.0, rise_from=None):
    """The CLI's generated inputs (pattern random, this seed), from core. offset > 0 adds about
    that much to every score (the last column of K set to 1, Q's to offset sqrt(d), so that
    tau q.k gains offset): a row's softmax is unchanged, its scores are near offset, and
    e^S overflows (float32 past 88, float64 past 709) unless the max is subtracted. With
    rise_from, only the keys from that index on gain it: the running max jumps by offset after
    the first blocks, so that a max taken from the first block and never updated (no rescale)
    overflows too, where a max subtracted at every block does not."""
    r = _core.run(nq=nq, nk=nk, d=d, M=max(4 * d, 64), seed=seed, record=False)
    q, k, v = r.q, r.k, r.v
    if offset:
        q, k = q.copy(), k.copy()
        q[:, -1] = np.float32(offset * np.sqrt(d))
        k[:, -1] = 1.0
        if rise_from is not None:
            k[:rise_from, -1] = 0.0
    return q, k, v


def _stores_of(machine_core, tensor, row):
    """The student's steps with a store of `tensor` that wrote `row`, and the row ranges of all
    their stores of `tensor` ("4:8, 8:10"), for a message about a wrong element of that row."""
    covering, ranges = [], []
    for step in machine_core.steps:
        for st in step.stores:
            if st.tensor != tensor:
                continue
            n = np.asarray(st.data).shape[0]
            ranges.append(f"{st.r0}:{st.r0 + n}")
            if st.r0 <= row < st.r0 + n and (not covering or covering[-1] is not step):
                covering.append(step)
    return covering, ", ".join(dict.fromkeys(ranges))


def _wrong_element(machine_core, tensor, row, name, got, exp, reference, hint):
    """'after your step ... , name = got but reference has exp. hint', naming the last step that
    stored that row; where no store wrote it, that the row still holds what it held before, and
    which rows the stores of the tensor did write."""
    covering, ranges = _stores_of(machine_core, tensor, row)
    if covering:
        return f"after {_where(covering[-1])}, {name} = {_fmt(got)} but {reference} has {_fmt(exp)}. {hint}"
    return (f"row {row} of {tensor} was never written ({name} = {_fmt(got)} is what it held before; {reference} "
            f"has {_fmt(exp)}): your stores of {tensor} wrote rows {ranges}. Hint: store the rows of the block "
            "the step is about (its i for O, l, m; its j for dK, dV).")


def _replay(writes_by_step, shapes):
    """HBM after applying recorded writes (tensor, row0, rows) in order, from shapes' zeros."""
    state = {name: np.zeros(shape, np.float32) for name, shape in shapes.items()}
    for tensor, row0, rows in writes_by_step:
        if tensor in state:
            state[tensor][row0:row0 + rows.shape[0]] = rows
    return state


def _departure(machine, reference_writes, algorithm, hint, priority=("m", "l", "L"), exact_j=False):
    """The first of the student's stores that differs from the reference schedule's write of
    the same rows (at the same j where both have one): the message, with the values. Among the
    departures of that (i, j), the statistics (priority) come first: a wrong m_i makes l_i and
    O_i wrong too, and its hint is the one that helps. exact_j: only stores at a j the reference
    wrote those rows at (a store whose step names no j is not compared with the last one)."""
    found = []
    for step in machine._m.steps:
        for st in step.stores:
            cands = reference_writes.get((st.tensor, st.r0))
            if not cands or (exact_j and st.j not in cands):
                continue
            ref = cands.get(st.j, cands[max(cands)])
            mine = np.asarray(st.data, np.float64)
            ref = np.asarray(ref, np.float64)  # all of the reference's columns: a store may write some (c0)
            ref = (ref.reshape(ref.shape[0], -1) if mine.ndim == 2 else ref.reshape(-1))[:mine.shape[0]]
            mine = mine[:ref.shape[0]]  # a store of more rows than the reference's write: the rows both have
            if mine.ndim == 2:
                ref = ref[:, st.c0:st.c0 + mine.shape[1]]
            idx = _first_bad(mine, ref)
            if idx is not None:
                found.append((step, st, mine, ref, idx))
    if not found:
        return None
    first = [f for f in found if (f[1].i, f[1].j) == (found[0][1].i, found[0][1].j)]
    rank = {t: k for k, t in enumerate(priority)}
    step, st, mine, ref, idx = min(first, key=lambda f: rank.get(f[1].tensor, len(rank)))
    name = _elem_name(st.tensor, st.r0, idx, mine.ndim == 1)
    return f"after {_where(step, st)}, {name} = {_fmt(mine[idx])} but {algorithm} has {_fmt(ref[idx])}. " + hint(st.tensor)


def _writes_table(result, rename=None):
    """{(tensor, row0): {j: rows}} of a core run's HBM writes (the last one of each j)."""
    table = {}
    for s in result.steps:
        for tensor, row0, rows in s.writes:
            tensor = (rename or {}).get(tensor, tensor)
            data = rows[:, 0] if rows.shape[1] == 1 else rows
            table.setdefault((tensor, row0), {})[s.j] = data
    return table
