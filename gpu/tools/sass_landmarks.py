#!/usr/bin/env python3
"""The order of the products, the waits and the exp2s in a kernel's SASS, runs compressed.

Reads `cuobjdump -sass` of a binary or object and prints, for each kernel whose mangled name
matches PATTERN, its wgmma instructions (MMA), warpgroup arrives (ARR), waits for products
(WAIT followed by the number of groups left pending) and MUFU.EX2 (EX2) in program order, runs of
the same kind written once with a count (EX2x66: 66 exp2 in a row). It shows where ptxas put a
wait against the softmax it is meant to follow (gpu/ladder/notes/tensor-cores.md, the FP8
forward's rung 8).

  cuobjdump -sass OBJ > sass.txt && python3 gpu/tools/sass_landmarks.py sass.txt 'Fp8ConfigILi64ELi3ELi2E'
"""
import re
import sys


def landmarks(path, pattern):
    name, seq = None, []

    def emit():
        if name and re.search(pattern, name):
            runs = []
            for t in seq:
                if runs and runs[-1][0] == t:
                    runs[-1][1] += 1
                else:
                    runs.append([t, 1])
            print("==", name)
            print(" ".join(f"{t}x{n}" if n > 1 else t for t, n in runs))

    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            emit()
            name, seq = m.group(1), []
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if not m:
            continue
        ins = m.group(1)
        if "QGMMA" in ins or "HGMMA" in ins:
            seq.append("MMA")
        elif "WARPGROUP.DEPBAR" in ins:
            seq.append("WAIT" + ins.split()[-1])
        elif "MUFU.EX2" in ins:
            seq.append("EX2")
        elif "WARPGROUP.ARRIVE" in ins:
            seq.append("ARR")
    emit()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: sass_landmarks.py SASS_DUMP PATTERN")
    landmarks(sys.argv[1], sys.argv[2])
