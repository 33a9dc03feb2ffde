#!/usr/bin/env python3
"""Standard-normal float32 arrays as .npy files, without NumPy (the device scripts' 4-D inputs).

  python3 tools/device/npy_random.py SEED PATH DIM [DIM ...] [-- PATH DIM [DIM ...] ...]
"""
import random
import struct
import sys


def save(path, shape, rng):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{s}, " for s in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"  # the data 64-byte aligned
    n = 1
    for s in shape:
        n *= s
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        chunk = 1 << 16
        for i in range(0, n, chunk):
            k = min(chunk, n - i)
            f.write(struct.pack(f"<{k}f", *(rng.gauss(0.0, 1.0) for _ in range(k))))


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    rng = random.Random(int(argv[1]))
    groups, cur = [], []
    for a in argv[2:]:
        if a == "--":
            groups.append(cur)
            cur = []
        else:
            cur.append(a)
    groups.append(cur)
    for g in groups:  # all checked before any file is written
        if len(g) < 2 or not all(x.isdigit() and int(x) > 0 for x in g[1:]):
            print(f"npy_random.py: error: expected PATH DIM [DIM ...], got {' '.join(g)}", file=sys.stderr)
            return 2
    for g in groups:
        save(g[0], [int(x) for x in g[1:]], rng)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
