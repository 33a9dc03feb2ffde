"""flashstep.run and friends against the CLI (bit for bit) and against float64, and bad input."""
import json
import subprocess

import numpy as np
import pytest

import flashstep


def cli(flashstep_bin, tmp_path, args, q=None, k=None, v=None):
    """Runs `flashstep run ARGS` writing O, lse and the trace; returns (O, lse, trace JSON)."""
    extra = []
    if q is not None:
        for name, a in (("q", q), ("k", k), ("v", v)):
            np.save(tmp_path / f"{name}.npy", a)
            extra += [f"--{name}", str(tmp_path / f"{name}.npy")]
    out = [f"--out-o={tmp_path / 'o.npy'}", f"--out-lse={tmp_path / 'lse.npy'}", f"--trace={tmp_path / 't.json'}"]
    subprocess.run([flashstep_bin, "run", *args, *extra, *out], check=True, capture_output=True)
    return (np.load(tmp_path / "o.npy"), np.load(tmp_path / "lse.npy"),
            json.loads((tmp_path / "t.json").read_text()))


def assert_same_as_cli(r, o, lse, trace):
    assert np.array_equal(r.o, o), "O differs from the CLI's"
    assert np.array_equal(r.lse, lse, equal_nan=True), "lse differs from the CLI's"
    assert r.hbm_read_bytes == trace["totals"]["hbm_read_bytes"]
    assert r.hbm_write_bytes == trace["totals"]["hbm_write_bytes"]
    assert r.peak_sram_bytes == trace["totals"]["peak_sram_bytes"]
    assert len(r.steps) == len(trace["steps"]) > 0
    for mine, theirs in zip(r.steps, trace["steps"]):
        assert (mine.label, mine.i, mine.j) == (theirs["label"], theirs["i"], theirs["j"])
        assert (mine.read_bytes, mine.write_bytes) == (theirs["hbm_read_bytes"], theirs["hbm_write_bytes"])
        if theirs.get("values", {}).get("l_new"):
            assert np.array_equal(mine.l_new, np.array(theirs["values"]["l_new"], np.float32))
    # the whole JSON the CLI writes, from the module's own trace
    assert json.loads(r.trace_json()) == trace


CASES = [
    (dict(schedule="fa1", M=64), ["--schedule", "fa1", "--M", "64"]),
    (dict(schedule="fa2", M=128, causal=True), ["--schedule", "fa2", "--M", "128", "--causal"]),
    (dict(schedule="standard"), ["--schedule", "standard"]),
    (dict(schedule="decode", M=128, splits=3, kv_len=50), ["--schedule", "decode", "--M", "128", "--splits", "3",
                                                            "--kv-len", "50"]),
    (dict(schedule="fa1", M=96, dtype="bf16", window=(5, 2)), ["--M", "96", "--dtype", "bf16", "--window", "5,2"]),
    (dict(schedule="fa2", M=128, Br=3, Bc=5, dropout=0.2, seed=9), ["--schedule", "fa2", "--M", "128", "--br", "3",
                                                                    "--bc", "5", "--dropout", "0.2", "--seed", "9"]),
    (dict(schedule="fa2", M=256, dtype="fp8"), ["--schedule", "fa2", "--M", "256", "--dtype", "fp8"]),
    (dict(schedule="fa1", M=256, dtype="fp8", fp8_scale="per-block", rotate=True),
     ["--M", "256", "--dtype", "fp8", "--fp8-scale", "per-block", "--rotate"]),
    (dict(schedule="decode", M=256, splits=2, dtype="fp8", fp8_scale="per-tensor"),
     ["--schedule", "decode", "--M", "256", "--splits", "2", "--dtype", "fp8", "--fp8-scale", "per-tensor"]),
]


@pytest.mark.parametrize("kwargs,args", CASES)
def test_numpy_inputs_equal_the_cli_bit_for_bit(flashstep_bin, tmp_path, kwargs, args):
    rng = np.random.default_rng()
    q = rng.normal(size=(97, 8))  # float64, as a user's arrays often are: rounded as the .npy reader
    k = rng.normal(size=(61, 8))
    v = rng.normal(size=(61, 8))
    r = flashstep.run(q, k, v, **kwargs)
    assert_same_as_cli(r, *cli(flashstep_bin, tmp_path, args, q, k, v))


def test_generated_inputs_equal_the_cli(flashstep_bin, tmp_path):
    r = flashstep.run(nq=45, nk=38, d=12, M=256, schedule="fa2", seed=4, pattern="large")
    assert_same_as_cli(r, *cli(flashstep_bin, tmp_path, ["--nq", "45", "--nk", "38", "--d", "12", "--M", "256",
                                                          "--schedule", "fa2", "--seed", "4", "--pattern", "large"]))


@pytest.mark.parametrize("kwargs", [dict(schedule="fa2"), dict(schedule="fa1", fp8_scale="per-block"),
                                    dict(schedule="decode", splits=3, rotate=True)])
def test_fp8_closed_form_equals_the_counted_bytes(kwargs):
    # e4m3 inputs at 1 byte, a bf16 O, the float32 scales: the form counts them as the memory model
    # does, the result's and closed_form()'s alike.
    r = flashstep.run(nq=40, nk=72, d=16, M=512, dtype="fp8", **kwargs)
    assert (r.closed_form_read_bytes, r.closed_form_write_bytes) == (r.hbm_read_bytes, r.hbm_write_bytes)
    f = flashstep.closed_form(kwargs["schedule"], 40, 72, 16, 512, dtype="fp8", splits=kwargs.get("splits"))
    assert (f["read_bytes"], f["write_bytes"]) == (r.hbm_read_bytes, r.hbm_write_bytes)
    assert "backward_read_bytes" not in f  # there is no FP8 backward
    # against the same problem in bf16: the inputs at half the bytes, O at the same
    b = flashstep.closed_form(kwargs["schedule"], 40, 72, 16, 512, dtype="bf16", splits=kwargs.get("splits"))
    assert f["read_bytes"] < b["read_bytes"] and f["write_bytes"] == b["write_bytes"]


def test_result_against_our_own_float64():
    rng = np.random.default_rng()
    q, k, v = (rng.normal(size=s).astype(np.float32) for s in ((33, 16), (50, 16), (50, 16)))
    r = flashstep.run(q, k, v, schedule="fa1", M=256)
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) / np.sqrt(16)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    o = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    lse = np.log(np.exp(s - s.max(axis=1, keepdims=True)).sum(axis=1)) + s.max(axis=1)
    assert r.o.dtype == np.float32 and r.lse.dtype == np.float32
    np.testing.assert_allclose(r.o, o, atol=2e-6, rtol=1e-5)
    np.testing.assert_allclose(r.lse, lse, atol=2e-6, rtol=1e-5)
    assert r.accuracy["o_max_abs"] < 2e-6
    t = r.tiling
    assert (t.Br, t.Bc, t.Tr, t.Tc) == (4, 4, 9, 13)  # Bc = ceil(M / 4d), Br = min(Bc, d)
    assert (r.hbm_read_bytes, r.hbm_write_bytes) == (r.closed_form_read_bytes, r.closed_form_write_bytes)
    cf = flashstep.closed_form("fa1", 33, 50, 16, 256)
    assert (cf["read_bytes"], cf["write_bytes"]) == (r.hbm_read_bytes, r.hbm_write_bytes)
    # the closed form itself (core/closed_form.h): reads 2 Nk d + Tc Nq (2d + 2), writes (Tc + 1) Nq (d + 2)
    assert cf["read_bytes"] == 4 * (2 * 50 * 16 + 13 * 33 * (2 * 16 + 2))
    assert cf["write_bytes"] == 4 * (13 + 1) * 33 * (16 + 2)


def float64_attention(q, k, v):
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


def rms(x, ref):
    return float(np.sqrt(np.mean((x.astype(np.float64) - ref) ** 2)))


def test_fp8_accuracy_lists_every_storage_against_our_own_float64():
    # Outlier inputs, where the storages differ most. Every entry is the RMS error of that storage's
    # own run against a float64 softmax computed here, and bf16 is the same schedule run in bf16.
    args = dict(nq=48, nk=64, d=64, M=4096, schedule="fa2", pattern="outliers", seed=3)
    r = flashstep.run(dtype="fp8", fp8_scale="per-block", **args)
    ref = float64_attention(r.q, r.k, r.v)
    a = r.accuracy
    assert a["o_rms"] == pytest.approx(rms(r.o, ref), rel=1e-9)
    c = a["companion"]
    assert (c["schedule"], c["dtype"]) == ("fa2", "bf16")
    assert c["o_rms"] == pytest.approx(rms(flashstep.run(dtype="bf16", **args).o, ref), rel=1e-9)
    got = {(e["fp8_scale"], e["rotate"]): e for e in a["fp8_storages"]}
    assert set(got) == {("per-tensor", False), ("per-block", False), ("per-block", True)}
    assert [k for k, e in got.items() if e["own"]] == [("per-block", False)]
    for (scale, rotate), e in got.items():
        mine = flashstep.run(dtype="fp8", fp8_scale=scale, rotate=rotate, **args)
        assert e["o_rms"] == pytest.approx(rms(mine.o, ref), rel=1e-9), (scale, rotate)
        assert e["o_max_abs"] == pytest.approx(float(np.abs(mine.o - ref).max()), rel=1e-9)
    # no rotated entry where d is not a power of two; a 16-bit run's companion is standard attention
    odd = flashstep.run(dtype="fp8", **{**args, "d": 48}).accuracy
    assert all(not e["rotate"] for e in odd["fp8_storages"]) and len(odd["fp8_storages"]) == 2
    half = flashstep.run(dtype="bf16", **args).accuracy
    assert half["companion"]["schedule"] == "standard" and "fp8_storages" not in half
    assert "companion" not in flashstep.run(**args).accuracy


BACKWARD_CASES = [
    (dict(schedule="fa1", M=128), ["--schedule", "fa1", "--M", "128"]),
    (dict(schedule="fa2", M=256, causal=True), ["--schedule", "fa2", "--M", "256", "--causal"]),
    (dict(schedule="standard", dtype="bf16"), ["--schedule", "standard", "--dtype", "bf16"]),
    (dict(schedule="fa2", M=128, kv_len=30, dropout=0.1, seed=4),
     ["--schedule", "fa2", "--M", "128", "--kv-len", "30", "--dropout", "0.1", "--seed", "4"]),
]


@pytest.mark.parametrize("kwargs,args", BACKWARD_CASES)
def test_backward_equals_the_cli_bit_for_bit(flashstep_bin, tmp_path, kwargs, args):
    r = flashstep.run(nq=21, nk=37, d=8, backward=True, **kwargs)
    common = ["--nq", "21", "--nk", "37", "--d", "8", "--backward", *args]
    grads = [f"--out-d{x}={tmp_path / (x + '.npy')}" for x in "qkv"]
    o, lse, trace = cli(flashstep_bin, tmp_path, common + grads)
    assert_same_as_cli(r, o, lse, trace)
    assert r.backward and r.do.shape == (21, 8)
    for x in "qkv":
        assert np.array_equal(getattr(r, "d" + x), np.load(tmp_path / f"{x}.npy")), "d" + x
    assert r.forward_read_bytes + r.backward_read_bytes == r.hbm_read_bytes
    assert r.forward_write_bytes + r.backward_write_bytes == r.hbm_write_bytes


def test_backward_that_overflows_is_the_clis_error(flashstep_bin, tmp_path):
    # 16 queries on 2 keys of zeros: P = 1/2 everywhere, so dV = 8 dO overflows float32 at dO = 3e38
    q, k, v, do = np.zeros((16, 4)), np.zeros((2, 4)), np.zeros((2, 4)), np.full((16, 4), 3e38)
    with pytest.raises(ValueError, match="the gradient dV overflows float32"):
        flashstep.run(q, k, v, backward=True, do=do)
    np.save(tmp_path / "do.npy", do.astype(np.float32))
    for name, a in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", a.astype(np.float32))
    p = subprocess.run([flashstep_bin, "run", "--backward", "--do", str(tmp_path / "do.npy"),
                        *[x for n in "qkv" for x in (f"--{n}", str(tmp_path / f"{n}.npy"))]],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "the gradient dV overflows float32" in p.stderr


def test_backward_against_our_own_float64_gradients():
    rng = np.random.default_rng(7)
    q, k, v, do = (rng.normal(size=s) for s in ((19, 8), (26, 8), (26, 8), (19, 8)))
    r = flashstep.run(q, k, v, schedule="fa2", M=128, backward=True, do=do)
    q, k, v, do = (x.astype(np.float32).astype(np.float64) for x in (q, k, v, do))  # as the run stored them
    tau = r.tau  # 1/sqrt(8) as the run holds it
    s = tau * q @ k.T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    o = p @ v
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - (do * o).sum(axis=1, keepdims=True))
    dq, dk = tau * ds @ k, tau * ds.T @ q
    for mine, ref in ((r.dq, dq), (r.dk, dk), (r.dv, dv)):
        np.testing.assert_allclose(mine, ref, atol=2e-5, rtol=1e-4)
    assert np.array_equal(r.do, do.astype(np.float32))
    a = r.accuracy
    assert a["dq_max_abs"] == pytest.approx(float(np.abs(r.dq - dq).max()), rel=1e-6)
    assert a["dv_rms"] == pytest.approx(float(np.sqrt(np.mean((r.dv - dv) ** 2))), rel=1e-6)
    # unmasked: the backward's bytes are its closed form (core/closed_form.h), the forward's too
    assert (r.backward_read_bytes, r.backward_write_bytes) == \
        (r.closed_form_backward_read_bytes, r.closed_form_backward_write_bytes)
    assert (r.forward_read_bytes, r.forward_write_bytes) == (r.closed_form_read_bytes, r.closed_form_write_bytes)
    f = flashstep.run(q, k, v, schedule="fa2", M=128)  # no backward: nothing of it
    assert not f.backward and f.dq is None and f.backward_read_bytes is None and "dq_rms" not in f.accuracy
    assert f.forward_read_bytes == f.hbm_read_bytes


def test_steps_carry_the_online_softmax_state():
    r = flashstep.run(n=8, d=4, M=64)  # the README's tiny problem
    s = r.steps[18]
    assert (s.label, s.i, s.j) == ("Alg1 L11", 0, 1)
    np.testing.assert_allclose(s.l_new, [5.58014, 3.16309, 3.31525, 2.82599], rtol=1e-5)
    np.testing.assert_allclose(s.l_old, [2.74088, 1.65716, 2.11695, 1.41845], rtol=1e-5)
    assert r.steps[0].m_new is None
    assert sum(x.read_bytes for x in r.steps) == r.hbm_read_bytes == 896


def test_lesson_and_schedules():
    lesson = flashstep.lesson_softmax([1, 2, 3, 4], 2)
    b = lesson.blocks[1]
    assert (b.begin, b.end, b.local_max, b.m_old, b.m_new) == (2, 4, 4.0, 2.0, 4.0)
    assert b.l_new == pytest.approx(1.55300179, rel=1e-8)
    assert b.alpha == pytest.approx(np.exp(-2.0))
    x = np.arange(1.0, 5.0)
    np.testing.assert_allclose(lesson.softmax, np.exp(x) / np.exp(x).sum(), rtol=1e-12)
    assert "1.55300179" in str(lesson)
    assert [s["name"] for s in flashstep.schedules()] == ["fa1", "fa2", "standard", "decode"]


def test_save_trace_writes_the_cli_json_plus_replay(tmp_path):
    r = flashstep.run(nq=10, nk=13, d=4, M=64)
    r.save_trace(tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["replay"]["format"] == "flashstep-trace-replay"
    del doc["replay"]
    assert doc == json.loads(r.trace_json())
    with pytest.raises(ValueError, match="not recorded"):
        flashstep.run(n=8, d=4, M=64, record=False).save_trace(tmp_path / "u.json")


def test_recording_follows_the_trace_limit():
    big = flashstep.run(n=4096, d=64, M=1024, schedule="fa2")  # millions of steps: over 1 GiB
    assert not big.recorded and big.steps == []
    assert (big.hbm_read_bytes, big.hbm_write_bytes) == (big.closed_form_read_bytes, big.closed_form_write_bytes)
    with pytest.raises(ValueError, match="refusing to record") as refused:
        flashstep.run(n=4096, d=64, M=1024, schedule="fa2", record=True)
    # The way out, in Python's words: the CLI's flags (--steps, --max-trace-mib) are no help here.
    assert "record=False" in str(refused.value) and "--" not in str(refused.value)
    # The limits named are the ones the lesson takes (the CLI's --block limit, 2^28).
    with pytest.raises(ValueError, match=r"^block must be at most 268435456 \(got 1180591620717411303424\)$") as huge:
        flashstep.lesson_softmax([1, 2, 3], 2**70)
    assert huge.type is ValueError
    with pytest.raises(ValueError, match=r"^block must be at least 1 \(got 0\)$"):
        flashstep.lesson_softmax([1, 2, 3], 0)
    assert flashstep.lesson_softmax([1, 2, 3], 2**28).max_diff < 1e-15
    assert flashstep.run(n=8, d=4, M=64).recorded


def test_gpu_is_a_clear_error():
    for fn in (flashstep.gpu.run, flashstep.gpu.verify):
        with pytest.raises(RuntimeError, match="GPU backend|not available from Python"):
            fn(n=8)


GOOD = np.ones((6, 4), np.float32)


@pytest.mark.parametrize("q,k,v,message", [
    (np.ones((6, 4), np.int32), GOOD, GOOD, "dtype int32; flashstep takes float32 or float64"),
    (np.ones((6, 4), np.float16), GOOD, GOOD, "dtype float16"),
    (np.ones((6, 4), np.complex64), GOOD, GOOD, "dtype complex64"),
    ([[1.0] * 4] * 6, GOOD, GOOD, "must be a NumPy array"),
    (np.ones(6, np.float32), GOOD, GOOD, "must be 2-D"),
    (np.ones((2, 6, 4), np.float32), GOOD, GOOD, "must be 2-D"),
    (GOOD, np.ones((6, 5), np.float32), GOOD, "mismatched shapes"),
    (GOOD, GOOD, np.ones((5, 4), np.float32), "mismatched shapes"),
    (np.ones((0, 4), np.float32), GOOD, GOOD, "empty"),
    (np.full((6, 4), np.nan), GOOD, GOOD, "NaN"),
    (GOOD, np.full((6, 4), np.inf), GOOD, "Inf"),
    (GOOD, GOOD, np.full((6, 4), 1e300), "beyond float32's range"),
    # numpy.ma: its mask is not in the buffer, so the masked elements would be read as data
    (GOOD, np.ma.masked_array(GOOD, mask=GOOD > 0), GOOD, r"k is a masked array \(numpy.ma\)"),
])
def test_bad_arrays_are_value_errors(q, k, v, message):
    with pytest.raises(ValueError, match=message):
        flashstep.run(q, k, v)


@pytest.mark.parametrize("kwargs,message", [
    (dict(n=10**9, d=64), "Nq must be in"),
    (dict(n=200000, d=256, M=1 << 20), "GFLOP|would need"),
    (dict(n=0), "at least 1"),
    (dict(n=8, d=4, M=3), "M"),
    (dict(n=8, schedule="fa3"), "unknown schedule"),
    (dict(n=8, dtype="fp64"), "unknown dtype"),
    (dict(n=8, dropout=1.5), "dropout"),
    (dict(n=8, Br=0), "Br must be"),
    (dict(n=8, M="lots"), "SRAM|M"),
    (dict(n=8, nq=4), "either n or nq"),
    (dict(n=8, window=(1, 2, 3)), "window must be"),
    (dict(n=8.5), "n must be a whole number"),
    (dict(n=8, M=64.5), "M must be a whole number"),
    (dict(n=8, scale=float("nan")), "scale"),
    # each argument's type: a ValueError naming it, nothing coerced (causal="no" is not True)
    (dict(n=8, seed=-1), r"seed must be in 0\.\.18446744073709551615 \(got -1\)"),
    (dict(n=8, seed=1.5), r"seed must be a whole number \(got 1\.5\)"),
    (dict(n=8, seed=2**64), "seed must be in"),
    (dict(n=8, causal="no"), r"causal must be True or False \(got 'no'\)"),
    (dict(n=8, causal=1), "causal must be True or False"),
    (dict(n=8, record="yes"), "record must be True or False"),
    (dict(n=8, kv_len=2.5), "kv_len must be a whole number"),
    (dict(n=8, dropout="0.1"), "dropout must be a number"),
    (dict(n=8, dropout=True), "dropout must be a number"),
    (dict(n=8, schedule=3), "schedule must be a string"),
    (dict(n=8, dtype=None), "dtype must be a string"),
    (dict(n=8, Br="3"), "Br must be a whole number"),
    (dict(n=8, Br=float("nan")), "Br must be a whole number"),
    (dict(n=8, splits=True), "splits must be a whole number"),
    (dict(n=8, dtype="fp8", fp8_scale="per-row"), "per-tensor or per-block"),
    (dict(n=8, dtype="fp8", fp8_scale=2), "fp8_scale must be a string"),
    (dict(n=8, fp8_scale="per-block"), "is for --dtype fp8"),
    (dict(n=8, rotate=True), "is for --dtype fp8"),
    (dict(n=8, d=12, dtype="fp8", rotate=True), "power of two"),
    (dict(n=8, dtype="fp8", rotate="yes"), "rotate must be True or False"),
    (dict(n=8, dtype="fp8", schedule="standard"), "fa1, fa2 or decode"),
    (dict(n=8, backward="yes"), "backward must be True or False"),
    (dict(n=8, do=np.ones((8, 16))), "pass backward=True"),
    (dict(n=8, backward=True, schedule="decode"), "decode has no backward pass"),
    (dict(n=8, backward=True, dtype="fp8"), "fp8 has no backward pass"),
    (dict(n=8, backward=True, do=np.ones((8, 15))), r"dO is 8 x 15 but must be Nq x d = 8 x 16"),
    (dict(n=8, backward=True, do=np.full((8, 16), np.nan)), "dO"),
    # the core's own line for a key length out of range, as the CLI prints it
    (dict(n=8, kv_len=-2), r"key length -2 is out of range 0\.\.8 \(or -1 for no padding\)"),
    (dict(n=8, kv_len=2**70), "kv_len must be in"),
    # a negative dropout is out of [0, 1); nothing about rounding to 1
    (dict(n=8, dropout=-0.1), r"must be in \[0, 1\) as a float32 \(got -0\.1\)$"),
    # a float is no block size, whole or not (as n refuses 8.0), and inf is no OverflowError
    (dict(n=8, Br=3.0), r"Br must be a whole number >= 1 \(got 3\.0\)"),
    (dict(n=8, Bc=float("inf")), "Bc must be a whole number"),
    (dict(n=8, scale=True), "scale must be a number"),
    # a float64 beyond float32 is quoted in six digits, not three hundred
    (dict(q=np.full((4, 4), 1e300), k=np.ones((4, 4)), v=np.ones((4, 4))),
     r"beyond float32's range \(1e\+300\) at element 0$"),
    # pattern generates inputs: with arrays it would be ignored
    (dict(q=np.ones((4, 4)), k=np.ones((4, 4)), v=np.ones((4, 4)), pattern="uniform"),
     "cannot be given with q, k, v"),
])
def test_bad_values_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        flashstep.run(**kwargs)


def test_numpy_scalars_are_whole_numbers_and_flags():
    a = flashstep.run(n=8, d=4, M=64, seed=np.uint64(3), causal=np.bool_(True), Br=np.int64(2),
                      scale=np.float32(0.5))
    b = flashstep.run(n=8, d=4, M=64, seed=3, causal=True, Br=2, scale=0.5)
    np.testing.assert_array_equal(a.o, b.o)
    assert a.hbm_read_bytes == b.hbm_read_bytes


@pytest.mark.parametrize("call,message", [
    (lambda: flashstep.closed_form("fa1", 8.5, 8, 4, 64), "nq must be a whole number"),
    (lambda: flashstep.closed_form(None, 8, 8, 4, 64), "schedule must be a string"),
    (lambda: flashstep.lesson_softmax([1, 2, 3, 4], 1.5), "block must be a whole number"),
    (lambda: flashstep.lesson_softmax([1, 2, 3, 4], "2"), "block must be a whole number"),
])
def test_other_functions_check_their_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_fp16_range_as_the_cli(flashstep_bin, tmp_path):
    q = np.ones((5, 4), np.float32)
    k = q.copy()
    k[2, 1] = 65510.0
    with pytest.raises(ValueError, match=r"input K has a value beyond fp16's range \(65510\) at row 2, column 1"):
        flashstep.run(q, k, q, dtype="fp16")
    for name, a in (("q", q), ("k", k), ("v", q)):
        np.save(tmp_path / f"{name}.npy", a)
    p = subprocess.run([flashstep_bin, "run", "--dtype", "fp16", "--q", str(tmp_path / "q.npy"), "--k",
                        str(tmp_path / "k.npy"), "--v", str(tmp_path / "v.npy")], capture_output=True, text=True)
    assert p.returncode == 2 and "has a value beyond fp16's range (65510) at row 2, column 1" in p.stderr


def test_only_some_arrays_or_arrays_with_sizes():
    with pytest.raises(ValueError, match="all three"):
        flashstep.run(GOOD, GOOD)
    with pytest.raises(ValueError, match="drop n"):
        flashstep.run(GOOD, GOOD, GOOD, n=6)


def test_non_contiguous_and_float64_arrays_are_copied():
    rng = np.random.default_rng()
    base = rng.normal(size=(20, 16))
    q = base[:, ::2]  # a strided view
    assert not q.flags.c_contiguous
    r1 = flashstep.run(q, q, q, M=64)
    r2 = flashstep.run(np.ascontiguousarray(q, np.float32), np.ascontiguousarray(q, np.float32),
                       np.ascontiguousarray(q, np.float32), M=64)
    assert np.array_equal(r1.o, r2.o)
    qf = np.asfortranarray(q)
    assert np.array_equal(flashstep.run(qf, qf, qf, M=64).o, r2.o)
