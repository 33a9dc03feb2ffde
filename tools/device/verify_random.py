#!/usr/bin/env python3
"""Random shapes for `flashstep verify`, one case a line: FAMILY<TAB>FLAGS.

The fixed shapes of the other device scripts are the ones the kernels were written against;
a hidden check picks its own. These draw sizes the kernels' tiles do not divide (one row, one
key, a ragged last block, Nq != Nk), masks and inputs at random from a seed, so a run is
repeatable and a new seed is a new set. Standard library only (the GPU machine's Python has
no NumPy guarantee).

Usage: verify_random.py SEED COUNT [--small]
  --small  sizes a compute-sanitizer run can afford (at most a few hundred rows and keys)
"""
import random
import sys


def size(rng, hi):
    """A length in [1, hi], spread over the scales: a third tiny, the rest log-uniform."""
    if rng.random() < 0.3:
        return rng.randint(1, 20)
    lo = 1.0
    return max(1, min(hi, int(round(lo * (hi / lo) ** rng.random()))))


def masks(rng, nk, causal_ok=True):
    flags = []
    if causal_ok and rng.random() < 0.4:
        flags.append("--causal")
    if rng.random() < 0.3 and nk > 1:
        flags += ["--kv-len", str(rng.randint(1, nk))]
    return flags


def pattern(rng, choices):
    p = rng.choice(choices)
    return [] if p == "random" else ["--pattern", p]


def tc_forward(rng, hi):
    dt = rng.choice(["bf16", "fp16"])
    nq, nk = size(rng, hi), size(rng, hi)
    f = ["--schedule", "fa2", "--tensor-cores", "--dtype", dt, "--p-dtype", dt,
         "--nq", str(nq), "--nk", str(nk), "--d", str(rng.choice([64, 128]))]
    return f + masks(rng, nk) + pattern(rng, ["random", "random", "large", "outliers"])


def tc_backward(rng, hi):
    return tc_forward(rng, hi) + ["--backward"]


def fp8_forward(rng, hi):
    nq, nk = size(rng, hi), size(rng, hi)
    f = ["--schedule", "fa2", "--tensor-cores", "--dtype", "fp8",
         "--nq", str(nq), "--nk", str(nk), "--d", str(rng.choice([64, 128]))]
    if rng.random() < 0.5:
        f += ["--fp8-scale", "per-block"]
    if rng.random() < 0.3:
        f.append("--rotate")
    return f + masks(rng, nk) + pattern(rng, ["random", "random", "outliers"])


def decode(rng, hi, fp8):
    nk = size(rng, hi * 60)
    nq = rng.choice([1, 1, 1, 2, 3, 4, 7, 8])
    f = ["--schedule", "decode", "--nq", str(nq), "--nk", str(nk),
         "--d", str(rng.choice([64, 128] if fp8 else [32, 64, 128]))]
    if fp8:
        f += ["--dtype", "fp8"]
        if rng.random() < 0.5:
            f += ["--fp8-scale", "per-block"]
        if rng.random() < 0.3:
            f.append("--rotate")
    else:
        f += ["--dtype", rng.choice(["bf16", "fp16", "fp32"])]
    if rng.random() < 0.5:
        # the CLI takes pages of at most Nk tokens
        f += ["--page-size", str(rng.choice([p for p in (1, 3, 7, 16, 16, 64, 128, 300) if p <= nk]))]
    if nk >= 256 and rng.random() < 0.5:
        # S between 1 and a handful; the CLI refuses S > Tc, which a tiny Nk can give
        f += ["--splits", str(rng.randint(1, 12))]
    return f + masks(rng, nk, causal_ok=nq > 1)


def fp32(rng, hi):
    sched = rng.choice(["fa1", "fa2", "standard"])
    nq, nk = size(rng, hi // 2), size(rng, hi // 2)
    f = ["--schedule", sched, "--nq", str(nq), "--nk", str(nk),
         "--d", str(rng.choice([8, 16, 32, 64])), "--M", rng.choice(["16KiB", "64KiB"])]
    f += masks(rng, nk)
    if rng.random() < 0.2 and nk > 1:
        f += ["--window", "%d,%d" % (rng.randint(-1, 40), rng.randint(-1, 40))]
    if rng.random() < 0.2:
        f += ["--dropout", rng.choice(["0.1", "0.5"])]
    if sched != "standard" and rng.random() < 0.4:
        f.append("--backward")
    return f


FAMILIES = [
    ("tc-fwd", 3, tc_forward),
    ("tc-bwd", 2, tc_backward),
    ("fp8-fwd", 2, fp8_forward),
    ("decode", 2, lambda rng, hi: decode(rng, hi, False)),
    ("fp8-dec", 2, lambda rng, hi: decode(rng, hi, True)),
    ("fp32", 1, fp32),
]


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or not argv[2].isdigit():
        sys.exit("usage: verify_random.py SEED COUNT [--small]")
    rng = random.Random(int(argv[1]))
    count = int(argv[2])
    hi = 300 if "--small" in argv[3:] else 1500
    weighted = [fam for fam in FAMILIES for _ in range(fam[1])]
    # every family at least once, the rest by weight
    order = list(FAMILIES) + [rng.choice(weighted) for _ in range(max(0, count - len(FAMILIES)))]
    for name, _, make in order[:count]:
        seed = rng.randint(1, 10**6)
        print("%s\t%s --seed %d" % (name, " ".join(make(rng, hi)), seed))


if __name__ == "__main__":
    main(sys.argv)
