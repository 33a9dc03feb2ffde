#!/usr/bin/env python3
# Nsight Compute's source page (ncu -i REP --page source --print-source sass --csv), one or more
# kernels per file, read instruction by instruction: per kernel (the one with the most warp-stall
# samples in each file) the instructions executed and the samples by opcode, the samples by stall
# reason, and the instructions that hold the most samples. Several files side by side, each with
# the number of heads its launch ran, give the opcode mix per head: what one kernel executes that
# the other does not.
#   python3 tools/device/sass_profile.py NAME=FILE.csv[:HEADS] [NAME=FILE.csv[:HEADS] ...]
import csv
import re
import sys
from collections import defaultdict


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def kernels(path):
    """[(name, header, rows)] for each kernel's table in the file."""
    out, name, head = [], None, None
    with open(path, newline="", errors="replace") as f:
        for r in csv.reader(f):
            if r and r[0] == "Kernel Name":
                name, head = (r[1] if len(r) > 1 else "?"), None
                continue
            if head is None and "Source" in r and "Address" in r:
                head = [c.strip() for c in r]
                out.append((name or "?", head, []))
                continue
            if head is not None and len(r) == len(head):
                out[-1][2].append(r)
    return out


def opcode(sass):
    toks = [t for t in sass.strip().split() if not t.startswith("@")]
    return toks[0].split(".")[0] if toks else "?"


class Profile:
    def __init__(self, label, path, heads):
        tables = kernels(path)
        if not tables:
            raise SystemExit(f"{path}: no source table (is it ncu's --page source --csv?)")
        col = lambda head, want: head.index(want) if want in head else None
        best = max(tables, key=lambda t: sum(num(r[col(t[1], "Warp Stall Sampling (All Samples)")]) for r in t[2]))
        self.label, self.name, head, self.rows = label, best[0], best[1], best[2]
        self.heads = heads
        self.src, self.addr = head.index("Source"), head.index("Address")
        self.samp = col(head, "Warp Stall Sampling (All Samples)")
        self.exe = col(head, "Instructions Executed")
        self.reasons = [(i, c) for i, c in enumerate(head) if c.startswith("stall_") and "Not Issued" not in c]
        self.total_samples = sum(num(r[self.samp]) for r in self.rows) or 1.0
        self.total_exe = sum(num(r[self.exe]) for r in self.rows) if self.exe is not None else 0.0
        self.exe_by_op, self.samp_by_op = defaultdict(float), defaultdict(float)
        for r in self.rows:
            op = opcode(r[self.src])
            self.samp_by_op[op] += num(r[self.samp])
            if self.exe is not None:
                self.exe_by_op[op] += num(r[self.exe])

    def report(self, top):
        print(f"== {self.label}: {self.name[:150]}")
        print(f"   {len(self.rows)} instructions in the SASS, {self.total_exe:.4g} warp instructions executed "
              f"({self.total_exe / self.heads:.4g} per head), {self.total_samples:.0f} samples")
        by_reason = {c: sum(num(r[i]) for r in self.rows) for i, c in self.reasons}
        print("   samples by reason: " + ", ".join(
            f"{c[6:]} {100 * v / self.total_samples:.1f}%" for c, v in sorted(by_reason.items(), key=lambda kv: -kv[1])[:9]
            if v > 0))
        print("   samples by opcode: " + ", ".join(
            f"{k} {100 * v / self.total_samples:.1f}%" for k, v in sorted(self.samp_by_op.items(), key=lambda kv: -kv[1])[:14]))
        print(f"   the {top} instructions with the most samples (share, address, SASS, main reasons):")
        for r in sorted(self.rows, key=lambda r: -num(r[self.samp]))[:top]:
            main = sorted(((num(r[i]), c[6:]) for i, c in self.reasons), reverse=True)[:2]
            why = ", ".join(f"{c} {v:.0f}" for v, c in main if v > 0)
            print(f"   {100 * num(r[self.samp]) / self.total_samples:5.2f}%  {r[self.addr].strip()[-6:]:>6}  "
                  f"{r[self.src].strip()[:64]:<64}  {why}")


def main(argv):
    if len(argv) < 2:
        raise SystemExit("usage: sass_profile.py NAME=FILE.csv[:HEADS] ...")
    profs = []
    for a in argv[1:]:
        label, _, rest = a.partition("=")
        m = re.match(r"(.*?)(?::(\d+))?$", rest)
        profs.append(Profile(label, m.group(1), int(m.group(2) or 1)))
    for p in profs:
        p.report(25)
    ops = sorted({o for p in profs for o in p.exe_by_op}, key=lambda o: -max(p.exe_by_op[o] / p.heads for p in profs))
    print("== warp instructions executed per head, by opcode (thousands)")
    print(f"   {'opcode':<10}" + "".join(f"{p.label:>14}" for p in profs))
    for o in ops[:32]:
        print(f"   {o:<10}" + "".join(f"{p.exe_by_op[o] / p.heads / 1e3:14.1f}" for p in profs))
    print(f"   {'all':<10}" + "".join(f"{p.total_exe / p.heads / 1e3:14.1f}" for p in profs))


if __name__ == "__main__":
    main(sys.argv)
