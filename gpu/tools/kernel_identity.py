#!/usr/bin/env python3
"""Whether the kernels of one build are those of another, entry by entry.

A ladder rung added beside the defaults must leave the defaults' code as it was; the device
checks of the defaults then still hold. This compares two builds of the same source file(s):

  kernel_identity.py ptx OLD.ptx NEW.ptx
      every entry of OLD looked for among NEW's with the kernel's own name, anonymous-namespace
      hashes (_GLOBAL__N__...), branch labels ($L__BB...), .loc lines and comments normalised;
      an entry equal once virtual registers are renumbered in order of first use is reported as
      such (ptxas may still schedule it differently).
  kernel_identity.py elf OLD NEW
      the machine code: each function's .text.<name> section of two ELF files (nvcc -cubin, or
      any object built with one section per function) byte for byte. Functions are matched by
      name with anonymous-namespace hashes removed and defaulted false bool template arguments
      (Lb0E) dropped, so that a template parameter appended with a default keeps the match.

Exit status 0 when every OLD entry is found unchanged (ptx: exactly), 1 otherwise, 2 on bad input.
"""
import re
import struct
import sys


def ptx_entries(path):
    text = open(path, errors="replace").read()
    out = {}
    for part in re.split(r"\n(?=\.visible \.entry|\.entry|\.weak \.entry)", text):
        m = re.match(r"(?:\.visible |\.weak )?\.entry (\S+)\(", part)
        if not m:
            continue
        name = m.group(1)
        body = part.replace(name, "K")
        body = re.sub(r"_GLOBAL__N__[0-9a-f_]+", "G", body)
        body = re.sub(r"\$L__BB[0-9]+_", "LBB_", body)
        body = re.sub(r"^\s*\.loc.*$", "", body, flags=re.M)
        body = re.sub(r"//.*$", "", body, flags=re.M)
        body = re.sub(r"\n\s*\n+", "\n", body)
        end = body.find("\n}")
        out[name] = body[:end] if end >= 0 else body
    return out


def renumbered(body):
    seen, count = {}, {}

    def one(m):
        if m.group(0) not in seen:
            count[m.group(1)] = count.get(m.group(1), 0) + 1
            seen[m.group(0)] = f"%{m.group(1)}#{count[m.group(1)]}"
        return seen[m.group(0)]

    body = re.sub(r"^\s*\.reg .*$", "", body, flags=re.M)
    return re.sub(r"%(rd|rs|r|fd|f|p)(\d+)", one, body)


def elf_text_sections(path):
    b = open(path, "rb").read()
    if b[:4] != b"\x7fELF" or b[4] != 2:
        raise ValueError(f"{path}: not a 64-bit ELF file")
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out = {}
    for h in heads:
        end = b.index(b"\0", strtab + h[0])
        name = b[strtab + h[0]:end].decode()
        if name.startswith(".text."):
            out[name[6:]] = b[h[4]:h[4] + h[5]]
    return out


def function_key(name):
    name = re.sub(r"_GLOBAL__N__[0-9a-f_]+", "G", name)
    while True:
        shorter = re.sub(r"(?:Lb0E)+(E+)", r"\1", name)
        if shorter == name:
            return name
        name = shorter


def compare_ptx(old_path, new_path):
    old, new = ptx_entries(old_path), ptx_entries(new_path)
    exact = set(new.values())
    loose = {renumbered(b) for b in new.values()}
    same = regs = 0
    for name, body in old.items():
        if body in exact:
            same += 1
        elif renumbered(body) in loose:
            regs += 1
            print(f"registers renumbered: {name}")
        else:
            print(f"CHANGED: {name}")
    changed = len(old) - same - regs
    print(f"{len(old)} entries of {old_path}: {same} unchanged, {regs} equal but for virtual register numbers, "
          f"{changed} changed ({len(new)} entries in {new_path})")
    return same == len(old)


def compare_elf(old_path, new_path):
    old, new = {}, {}
    for src, dst in ((elf_text_sections(old_path), old), (elf_text_sections(new_path), new)):
        for name, code in src.items():
            key = function_key(name)
            if key in dst:
                raise ValueError(f"two functions of one file share the key {key}")
            dst[key] = code
    same = 0
    for key, code in old.items():
        if key not in new:
            print(f"MISSING: {key}")
        elif new[key] != code:
            diff = sum(1 for i in range(0, min(len(code), len(new[key])), 16) if code[i:i + 16] != new[key][i:i + 16])
            print(f"DIFFERENT: {key} ({len(code)} and {len(new[key])} bytes, {diff} 16-byte words differ)")
        else:
            same += 1
    print(f"{len(old)} functions of {old_path}: {same} with the same machine code in {new_path}")
    return same == len(old)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("ptx", "elf"):
        print("usage: kernel_identity.py ptx OLD.ptx NEW.ptx | elf OLD NEW (the module's docstring says more)",
              file=sys.stderr)
        return 2
    try:
        ok = compare_ptx(argv[2], argv[3]) if argv[1] == "ptx" else compare_elf(argv[2], argv[3])
    except (OSError, ValueError, struct.error) as e:
        print(f"kernel_identity.py: error: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
