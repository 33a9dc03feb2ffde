#!/usr/bin/env python3
"""Where the softmax sits against the waits for the products, in the SASS of gpu/fa3_forward.cu.

Reads `cuobjdump --dump-sass` of a binary with the fa3 kernels (or `nvdisasm -c` of a cubin) and prints, for each bf16 kernel
(variant, d), how many MUFU.EX2 (the softmax's exp2) lie between a wait for S_ij alone
(WARPGROUP.DEPBAR.LE gsb0, 0x1) and the next wait for every product (WARPGROUP.DEPBAR.LE gsb0, 0x0),
out of all MUFU.EX2 in the kernel. The intra-warpgroup overlap (v17 and the rungs built on it) is
in the machine code only when that count is the softmax of a block (2 + Bc / 2 per thread, fewer
where a polynomial takes some); 0 means
ptxas moved the wait for O += P~ V in front of the softmax, which then runs with the tensor cores idle.

  python3 gpu/tools/sass_overlap.py sass.txt [VARIANT ...]
"""
import re
import sys


def kernels(path):
    name, body = None, []
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line) or re.match(r"^\.text\.(\S+):", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name:
            m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
            if m:
                body.append(m.group(1))
    if name:
        yield name, body


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sass_overlap.py SASS_DUMP [VARIANT ...]")
    want = {int(v) for v in sys.argv[2:]}
    rows = []
    for name, body in kernels(sys.argv[1]):
        m = re.search(r"fa3_kernel.*?13__nv_bfloat16.*?Fa3ConfigILi(\d+)ELi(\d+)ELi(\d+)E", name)
        if not m:
            continue
        v, d, bc = int(m[1]), int(m[2]), int(m[3])
        if want and v not in want:
            continue
        between, inside = 0, None
        for ins in body:
            if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in ins:
                inside = 0
            elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in ins:
                if inside is not None:
                    between = max(between, inside)
                inside = None
            elif "MUFU.EX2" in ins and inside is not None:
                inside += 1
        total = sum("MUFU.EX2" in ins for ins in body)
        rows.append((v, d, bc, between, total))
    if not rows:
        sys.exit("sass_overlap.py: no bf16 fa3_kernel in " + sys.argv[1])
    print("variant d Bc  exp2 under O += P~V (of one block's %s)  exp2 in kernel" % "2 + Bc/2")
    for v, d, bc, between, total in sorted(rows):
        print("v%-6d %-3d %-4d %4d of %-4d %s  %d" % (v, d, bc, between, 2 + bc // 2,
                                                     "overlap" if between > 0 else "none   ", total))


if __name__ == "__main__":
    main()
