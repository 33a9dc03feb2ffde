"""Counts, per kernel of a cubin, the SASS instructions whose low 12 bits are 0x9f0 (HGMMA in the
test of wgmma_dead.cu: the count follows the number of wgmma) and all instructions, reading the
ELF's .text sections directly (no cuobjdump on the machine where this ran).
Usage: python3 opcodes.py A.cubin [B.cubin ...]"""
import re
import struct
import sys


def text_sections(path):
    b = open(path, "rb").read()
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    entsize, count, strndx = struct.unpack_from("<HHH", b, 0x3A)
    hdr = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * entsize) for i in range(count)]
    names = hdr[strndx][4]
    for h in hdr:
        name = b[names + h[0]:b.index(b"\0", names + h[0])].decode()
        if name.startswith(".text."):
            yield name, [struct.unpack_from("<Q", b, i)[0] for i in range(h[4], h[4] + h[5], 16)]


for path in sys.argv[1:]:
    for name, words in text_sections(path):
        m = re.search(r"WsBwdConfigILi(\d+)", name)
        kernel = f"config {m.group(1)}, {'bf16' if 'bfloat16' in name else 'fp16'}" if m else name[6:60]
        print(f"{path}: {kernel}: {len(words)} instructions, {sum(w & 0xFFF == 0x9F0 for w in words)} with 0x9f0")
