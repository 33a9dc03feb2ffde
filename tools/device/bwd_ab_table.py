# The table of tools/device/bwd_prepare_ab.sh: two builds' backward TFLOP/s (bench_base1/2.txt:
# OLD, bench_new1/2.txt: NEW) beside cuDNN's (sdpa.txt), per point, with NEW / OLD and each / cuDNN;
# then, where bench_newenv.txt exists (NEW with NEW_ENV set), its TFLOP/s over NEW's mean.
import os, sys
import bwd_tables  # tools/device
out = sys.argv[1]
runs = {k: bwd_tables.ours(f"{out}/bench_{k}.txt") for k in ("base1", "new1", "new2", "base2", "newenv")
        if os.path.exists(f"{out}/bench_{k}.txt")}
runs = {k: {(n, d, c): t for (n, d, c, v), t in r.items()} for k, r in runs.items()}
torch = bwd_tables.torch(f"{out}/sdpa.txt")
print("backward TFLOP/s, bf16 B16 H16, 3 calls back to back | N d causal | base1 new1 new2 base2 | new/base | cudnn | base/cudnn new/cudnn | f+b: base new cudnn")
for c in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            k = (n, d, c)
            v = {r: runs[r].get(k) for r in runs}
            b = [v[r][1] for r in ("base1", "base2") if v.get(r)]
            w = [v[r][1] for r in ("new1", "new2") if v.get(r)]
            bf = [v[r][2] for r in ("base1", "base2") if v.get(r)]
            wf = [v[r][2] for r in ("new1", "new2") if v.get(r)]
            cu = torch.get(("cudnn", n, d, c))
            f = lambda x: f"{x:6.1f}" if x else "     -"
            mb = sum(b) / len(b) if b else 0; mw = sum(w) / len(w) if w else 0
            print(f"{n:5d} {d:3d} {'yes' if c else 'no ':3s} | " + " ".join(f(v[r][1] if v.get(r) else 0) for r in ("base1", "new1", "new2", "base2")) +
                  f" | {mw / mb if mb and mw else 0:5.3f} | {f(cu[1] if cu else 0)} | {mb / cu[1] if cu and mb else 0:5.3f} {mw / cu[1] if cu and mw else 0:5.3f}"
                  f" | {f(sum(bf) / len(bf) if bf else 0)} {f(sum(wf) / len(wf) if wf else 0)} {f(cu[2] if cu else 0)}")
if "newenv" in runs:
    print("NEW with NEW_ENV | N d causal | TFLOP/s | over NEW's mean")
    for c in (False, True):
        for d in (64, 128):
            for n in (4096, 16384):
                k = (n, d, c)
                e = runs["newenv"].get(k)
                w = [runs[r][k][1] for r in ("new1", "new2") if r in runs and runs[r].get(k)]
                if e and w:
                    print(f"{n:5d} {d:3d} {'yes' if c else 'no ':3s} | {e[1]:6.1f} | {e[1] / (sum(w) / len(w)):5.3f}")
