#!/usr/bin/env bash
# gpu/tools/kernel_identity.py on inputs written here: PTX entries that differ only in the kernel's
# name, anonymous-namespace hash, branch labels and comments are unchanged; renumbered virtual
# registers are reported as such and fail; another instruction is a change. Machine code: two host
# objects built from the same function (one section per function) match, another body does not,
# and a defaulted false template argument appended to a function's name keeps the match. Bad input
# is one error line and exit 2. Usage: check_kernel_identity.sh REPO_ROOT
set -u
root=${1:?usage: check_kernel_identity.sh REPO_ROOT}
tool="python3 $root/gpu/tools/kernel_identity.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
source "$root/tests/check_expect.sh"
entry() {  # NAME REG_A REG_B LABEL OPCODE
  printf '.visible .entry %s(\n.param .u64 %s_param_0\n)\n{\n\t.reg .b32 \t%%r<9>;\n\tmov.u32 \t%%r%s, %%tid.x;\n' "$1" "$1" "$2"
  printf '$L__BB%s_1:\n\t%s \t%%r%s, %%r%s, 1; // a comment\n\tbra.uni \t$L__BB%s_1;\n}\n' "$4" "$5" "$3" "$2" "$4"
}
entry _ZN1a27_GLOBAL__N__1234abcd_5_file1kIiEEvv 1 2 0 add.s32 > "$T/old.ptx"
entry _ZN1a27_GLOBAL__N__99990000_5_file1kIiEEvv 1 2 7 add.s32 > "$T/same.ptx"
entry _ZN1a27_GLOBAL__N__1234abcd_5_file1kIiEEvv 4 6 0 add.s32 > "$T/regs.ptx"
entry _ZN1a27_GLOBAL__N__1234abcd_5_file1kIiEEvv 1 2 0 sub.s32 > "$T/changed.ptx"
$tool ptx "$T/old.ptx" "$T/same.ptx" > "$T/out" 2>&1; expect "names, hashes, labels, comments aside: unchanged" 0 $?
grep -q "1 unchanged, 0 equal but for virtual register numbers, 0 changed" "$T/out"; expect "and counted so" 0 $?
$tool ptx "$T/old.ptx" "$T/regs.ptx" > "$T/out" 2>&1; expect "registers renumbered fails" 1 $?
grep -q "0 unchanged, 1 equal but for virtual register numbers, 0 changed" "$T/out"; expect "and is named" 0 $?
$tool ptx "$T/old.ptx" "$T/changed.ptx" > "$T/out" 2>&1; expect "another instruction fails" 1 $?
grep -q "^CHANGED: " "$T/out"; expect "and is named a change" 0 $?

printf 'template <bool A = false> int k(int x) { return x + 1; }\nint use(int x) { return k(x); }\n' > "$T/a.cpp"
printf 'template <bool A = false, bool B = false> int k(int x) { return x + 1; }\nint use(int x) { return k<false, false>(x); }\n' > "$T/b.cpp"
printf 'template <bool A = false> int k(int x) { return x + 2; }\nint use(int x) { return k(x); }\n' > "$T/c.cpp"
for f in a b c; do c++ -O1 -fno-inline -ffunction-sections -c "$T/$f.cpp" -o "$T/$f.o" || bad=1; done
$tool elf "$T/a.o" "$T/b.o" > "$T/out" 2>&1; expect "a defaulted bool argument appended: the same code" 0 $?
$tool elf "$T/a.o" "$T/c.o" > "$T/out" 2>&1; expect "another body differs" 1 $?
grep -q "^DIFFERENT: " "$T/out"; expect "and is named" 0 $?
$tool elf "$T/a.cpp" "$T/b.o" > "$T/out" 2>&1; expect "not an ELF file: exit 2" 2 $?
expect "with one error line" 1 "$(wc -l < "$T/out")"
$tool ptx "$T/old.ptx" > "$T/out" 2>&1; expect "too few arguments: exit 2" 2 $?
[ "$bad" -eq 0 ] && echo "kernel identity ok"
exit "$bad"
