#!/usr/bin/env python3
"""flashstep's --dtype fp8 against PyTorch's torch.float8_e4m3fn (docs/fp8.md), where PyTorch has
it (the GPU machine); NumPy has no e4m3. Needs only the flashstep program (a CPU build will do).

1. Rounding: with Nq = Nk = 1 the one weight is 1, so O = round_e4m3(V / s_V) s_V; a V row whose
   largest |entry| is 448 has s_V = 448 / 448 = 1, and e4m3 values are exact in bf16 (O's type), so
   O is round_e4m3(V) itself. Six rows of d = 65536 random values over every binade, and every
   midpoint between neighbouring e4m3 values (the ties), against torch's cast.
2. Attention: fa1 and fa2, per-tensor and per-block, on normal inputs and on inputs with outliers
   (Nq = 97, Nk = 131, d = 64, Br = Bc = 64), against the same arithmetic written here in torch
   block by block; both are also compared with float64.

Usage: python3 tests/fp8_torch_check.py path/to/flashstep      (exit 0: all agree)
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

import torch

E4 = torch.float8_e4m3fn


def write_npy(path, rows, cols, data):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode())
        f.write(struct.pack('<%df' % len(data), *data))


def read_npy(path):
    b = open(path, 'rb').read()
    hl = struct.unpack('<H', b[8:10])[0]
    shape = eval(b[10:10 + hl].decode())['shape']  # the header is NumPy's dict literal
    body = b[10 + hl:]
    return torch.tensor(struct.unpack('<%df' % (len(body) // 4), body), dtype=torch.float32).view(*shape)


def flashstep(binary, args):
    r = subprocess.run([binary] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('flashstep %s failed: %s' % (' '.join(args), r.stderr.strip()))


def e4m3_values():
    out = []
    for code in range(0x7F):  # +0 .. 448
        E, M = (code >> 3) & 15, code & 7
        out.append(M * 2.0 ** -9 if E == 0 else (1 + M / 8) * 2.0 ** (E - 7))
    return out


def check_rounding(binary, tmp):
    rng = random.Random(11)
    vals = e4m3_values()
    ties = [(a + b) / 2 for a, b in zip(vals, vals[1:])]
    bad = total = 0
    d = 65536
    for run in range(6):
        row = [448.0]
        if run == 0:
            row += ties + [-t for t in ties] + vals + [-v for v in vals]
        while len(row) < d:
            row.append(rng.choice([-1.0, 1.0]) * 2.0 ** rng.uniform(-13, 8.8))
        zeros = [0.0] * d
        write_npy(os.path.join(tmp, 'rq.npy'), 1, d, zeros)
        write_npy(os.path.join(tmp, 'rk.npy'), 1, d, zeros)
        write_npy(os.path.join(tmp, 'rv.npy'), 1, d, row)
        o = os.path.join(tmp, 'ro.npy')
        flashstep(binary, ['run', '--q', os.path.join(tmp, 'rq.npy'), '--k', os.path.join(tmp, 'rk.npy'), '--v',
                           os.path.join(tmp, 'rv.npy'), '--M', str(4 * d), '--dtype', 'fp8', '--out-o', o])
        got = read_npy(o)[0]
        want = torch.tensor(row, dtype=torch.float32).to(E4).float()
        bad += int((got != want).sum())  # -0 and +0 equal here: O's sums lose a zero's sign
        total += d
    print('rounding: %d values, %d differ from torch.float8_e4m3fn' % (total, bad))
    return bad == 0


def quantise(X, rows):
    q, scales = torch.empty_like(X), []
    for r0 in range(0, X.shape[0], rows):
        amax = X[r0:r0 + rows].abs().max()
        s = amax / 448 if amax > 0 else torch.tensor(1.0)
        q[r0:r0 + rows] = (X[r0:r0 + rows] / s).to(E4).float()
        scales.append(s)
    return q, scales


def emulate(Q, K, V, sched, per_block, B, tau):
    (Qq, sq), (Kq, sk), (Vq, sv) = (quantise(X, B if per_block else X.shape[0]) for X in (Q, K, V))
    s = lambda scales, b: scales[b if per_block else 0]
    nq, nk, d = Q.shape[0], K.shape[0], Q.shape[1]
    Tr, Tc = (nq + B - 1) // B, (nk + B - 1) // B
    O = torch.zeros(nq, d)
    if sched == 'fa2':  # FA2fwd L4-L14: running max, P~ in e4m3 for the product, O / l once, bf16
        for i in range(Tr):
            qi = Qq[i * B:(i + 1) * B]
            m = torch.full((qi.shape[0], 1), -float('inf'))
            l, o = torch.zeros(qi.shape[0], 1), torch.zeros(qi.shape[0], d)
            for j in range(Tc):
                S = (qi @ Kq[j * B:(j + 1) * B].T) * (tau * s(sq, i) * s(sk, j))
                mn = torch.maximum(m, S.max(1, keepdim=True).values)
                P, a = torch.exp(S - mn), torch.exp(m - mn)
                l = a * l + P.sum(1, keepdim=True)
                o = a * o + (P.to(E4).float() @ Vq[j * B:(j + 1) * B]) * s(sv, j)
                m = mn
            O[i * B:(i + 1) * B] = (o / l).to(torch.bfloat16).float()
    else:  # Algorithm 1: O, l, m in HBM, O stored in bf16 at every (i, j)
        l, m = torch.zeros(nq, 1), torch.full((nq, 1), -float('inf'))
        for j in range(Tc):
            for i in range(Tr):
                rs = slice(i * B, (i + 1) * B)
                S = (Qq[rs] @ Kq[j * B:(j + 1) * B].T) * (tau * s(sq, i) * s(sk, j))
                mt = S.max(1, keepdim=True).values
                P = torch.exp(S - mt)
                mn = torch.maximum(m[rs], mt)
                a, b = torch.exp(m[rs] - mn), torch.exp(mt - mn)
                ln = a * l[rs] + b * P.sum(1, keepdim=True)
                pv = (P.to(E4).float() @ Vq[j * B:(j + 1) * B]) * s(sv, j)
                O[rs] = ((l[rs] * a * O[rs] + b * pv) / ln).to(torch.bfloat16).float()
                l[rs], m[rs] = ln, mn
    return O


def check_attention(binary, tmp):
    rng = random.Random(7)
    nq, nk, d, B, tau = 97, 131, 64, 64, 0.125
    ok = True
    for outliers in (False, True):
        names = []
        for name, rows in (('q', nq), ('k', nk), ('v', nk)):
            m = [rng.gauss(0, 1) for _ in range(rows * d)]
            if outliers:  # as --pattern outliers: two entries of magnitude 10 to 30 per row
                for r in range(rows):
                    for _ in range(2):
                        m[r * d + rng.randrange(d)] = rng.choice([-1, 1]) * rng.uniform(10, 30)
            path = os.path.join(tmp, '%s.npy' % name)
            write_npy(path, rows, d, m)
            names.append(path)
        Q, K, V = (read_npy(p) for p in names)
        ref = torch.softmax((Q.double() @ K.double().T) * tau, 1) @ V.double()
        for sched in ('fa1', 'fa2'):
            for scale in ('per-tensor', 'per-block'):
                o = os.path.join(tmp, 'o.npy')
                flashstep(binary, ['run', '--q', names[0], '--k', names[1], '--v', names[2], '--M', '16384',
                                   '--schedule', sched, '--dtype', 'fp8', '--fp8-scale', scale, '--out-o', o])
                got, want = read_npy(o), emulate(Q, K, V, sched, scale == 'per-block', B, tau)
                diff = (got - want).abs().max().item()
                err = (got.double() - ref).abs().max().item()
                # The two emulations sum in different orders (float32), which can move a P~ entry
                # across an e4m3 rounding boundary or O across a bf16 one now and then; they must
                # still agree far better than either agrees with float64 (or to two bf16 steps).
                good = diff <= max(0.1 * err, 2 ** -7 * want.abs().max().item())
                ok &= good
                print('%-9s %s %-10s |flashstep - torch| max %.3g; error vs float64 %.3g  %s' % (
                    'outliers' if outliers else 'normal', sched, scale, diff, err, 'ok' if good else 'DIFFERENT'))
    return ok


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        ok = check_rounding(sys.argv[1], tmp)
        ok = check_attention(sys.argv[1], tmp) and ok
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
