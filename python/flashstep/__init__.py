"""flashstep in Python: FlashAttention's schedules step by step, over flashstep's C++ core.

Every number comes from the core (the same code as the `flashstep` command line): the schedules,
the memory model that counts each byte between HBM and SRAM, the closed forms, the float64
reference. Errors in what you pass are ValueError with the command line's one-line message.

    import flashstep
    r = flashstep.run(n=8, d=4, M=64)              # the CLI's inputs (seed 1)
    r = flashstep.run(q, k, v, schedule="fa2")     # NumPy float32/float64 arrays
    r.o, r.lse, r.hbm_read_bytes, r.closed_form_read_bytes, r.tiling, r.accuracy, r.steps
    r.save_trace("t.json")                         # flashstep gui --trace t.json
    r = flashstep.run(q, k, v, backward=True)      # and the backward: r.dq, r.dk, r.dv

docs/python.md has the whole API; flashstep.puzzles the puzzles.
"""
import operator

import numpy as np

from . import _core
from ._core import Lesson, Result, Step, Tiling

__all__ = ["run", "closed_form", "schedules", "lesson_softmax", "gpu", "puzzles",
           "Result", "Step", "Tiling", "Lesson"]


def run(q=None, k=None, v=None, schedule="fa1", M=None, Br=None, Bc=None, causal=False,
        window=None, kv_len=None, dtype="fp32", dropout=0.0, seed=1, splits=None, *,
        n=None, nq=None, nk=None, d=None, scale=None, pattern="random", record=None, fp8_scale=None,
        rotate=False, backward=False, do=None):
    """Runs one schedule (fa1, fa2, standard, decode) on q, k, v, as `flashstep run` does.

    q: (Nq, d), k and v: (Nk, d), float32 or float64 (rounded to float32, as the .npy reader
    does). Without them, n or nq/nk, d, seed and pattern generate the CLI's inputs. M is the
    SRAM size in float32 words (or a string such as "64KiB"); Br, Bc override the paper's
    block sizes; window=(left, right); kv_len: key padding. dtype="fp8" stores Q, K, V in e4m3
    with float32 scales, fp8_scale="per-tensor" (the default) or "per-block", rotate=True rotates Q
    and K first (`--fp8-scale`, `--rotate`; docs/fp8.md). backward=True runs the schedule's
    backward after the forward (`--backward`) on do, (Nq, d), or on the CLI's dO from the seed
    (`--do`): .dq, .dk, .dv, .do and each pass's bytes. record=None records the steps when
    the trace fits in 1 GiB (else the fast path: same bytes, .recorded False, no steps);
    True records or refuses; False never records. Returns a Result: .o, .lse, .hbm_read_bytes, .hbm_write_bytes,
    .closed_form_read_bytes, .closed_form_write_bytes, .peak_sram_bytes, .tiling,
    .accuracy, .steps, .save_trace(path); with the backward .dq, .dk, .dv, .forward_read_bytes,
    .backward_read_bytes, .closed_form_backward_read_bytes (and their write_ twins).
    """
    if pattern != "random" and any(a is not None for a in (q, k, v)):
        raise ValueError(f"pattern={pattern!r} generates the inputs; it cannot be given with q, k, v")
    return _core.run(q, k, v, schedule=_text(schedule, "schedule"), M=M, Br=_size(Br, "Br"), Bc=_size(Bc, "Bc"),
                     causal=_flag(causal, "causal"), window=window,
                     kv_len=-1 if kv_len is None else _whole(kv_len, "kv_len", -2**63, 2**63 - 1),
                     dtype=_text(dtype, "dtype"), dropout=_number(dropout, "dropout"),
                     seed=_whole(seed, "seed", 0, 2**64 - 1), splits=_size(splits, "splits"), n=n, nq=nq,
                     nk=nk, d=d, scale=None if scale is None else _number(scale, "scale"), pattern=_text(pattern, "pattern"),
                     record=None if record is None else _flag(record, "record"),
                     fp8_scale="" if fp8_scale is None else _text(fp8_scale, "fp8_scale"), rotate=_flag(rotate, "rotate"),
                     backward=_flag(backward, "backward"), do=do)


# The arguments' checks: each wrong type or value is a ValueError naming the argument, as the
# CLI names its flag; nothing is rounded or coerced quietly (causal="no" is not True).

def _whole(value, name, lo=None, hi=None):
    """An integer (int, NumPy integer) in [lo, hi]."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a whole number (got {value!r})")
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be a whole number (got {value!r})") from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        bounds = f"in {lo}..{hi}" if lo is not None and hi is not None else \
            f"at least {lo}" if lo is not None else f"at most {hi}"
        raise ValueError(f"{name} must be {bounds} (got {n})")
    return n


def _size(value, name):
    """None as core's "not given" (0); a value below 1 is refused here, as the CLI refuses it. An
    int or a NumPy integer: a float is refused as n, nq, nk, d and M refuse it (3.0 included)."""
    if value is None:
        return 0
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1 \
            or value > 2**62:
        raise ValueError(f"{name} must be a whole number >= 1 (got {value!r})")
    return int(value)


def _flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False (got {value!r})")
    return bool(value)


def _number(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number (got {value!r})")
    return float(value)


def _text(value, name):
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, such as {_EXAMPLES[name]!r} (got {value!r})")
    return value


_EXAMPLES = {"schedule": "fa2", "dtype": "bf16", "pattern": "random", "fp8_scale": "per-block"}


def closed_form(schedule, nq, nk, d, M, Br=None, Bc=None, dtype="fp32", splits=None):
    """The schedule's HBM traffic in closed form (core/closed_form.h), unmasked: a dict with
    read_bytes, write_bytes, read_elems, write_elems, Br, Bc, Tr, Tc (and the backward's bytes
    for schedules that have one)."""
    return _core.closed_form(_text(schedule, "schedule"), _whole(nq, "nq"), _whole(nk, "nk"), _whole(d, "d"), M,
                             Br=_size(Br, "Br"), Bc=_size(Bc, "Bc"), dtype=_text(dtype, "dtype"),
                             splits=_size(splits, "splits"))


def schedules():
    """The schedules, in the CLI's order: dicts with name, paper_name, title, tiled, backward."""
    return _core.schedules()


def lesson_softmax(values, block):
    """The online-softmax lesson (`flashstep lesson softmax`): softmax of `values` block by
    block. Returns a Lesson: .blocks (each with begin, end, local_max, local_sum, m_old, l_old,
    m_new, l_new, alpha = e^(m_old - m_new), beta = e^(local_max - m_new)), .softmax (the
    online result), .direct, .max_diff; str() prints the CLI's text."""
    b = _whole(block, "block", 1)
    if b > 2**28:  # core's kMaxLessonBlock, in core's words (a larger int would not reach it)
        raise ValueError(f"block must be at most 268435456 (got {b})")
    return _core.lesson_softmax(values, b)


from . import gpu, puzzles  # noqa: E402  (they use the names above)
