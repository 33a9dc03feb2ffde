#!/usr/bin/env bash
# tools/device/npy_random.py (the device scripts' 4-D inputs, written without NumPy): its files are
# .npy version 1.0 with the data 64-byte aligned and product(shape) float32 values, flashstep reads
# them as Q, K and V, one seed gives the same bytes, and bad arguments are one error line and exit
# 2. Usage: check_npy_random.sh REPO_ROOT FLASHSTEP_BINARY
set -u
root=${1:?usage: check_npy_random.sh REPO_ROOT FLASHSTEP}
fs=${2:?usage: check_npy_random.sh REPO_ROOT FLASHSTEP}
tool="python3 $root/tools/device/npy_random.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
source "$root/tests/check_expect.sh"
$tool 5 "$T/q.npy" 8 4 -- "$T/k.npy" 12 4 -- "$T/v.npy" 12 4 -- "$T/x.npy" 2 3 5 7; expect "written" 0 $?
# The header's length field, and the file's size: 10 + that length (a multiple of 64) + 4 bytes a value.
hlen() { od -An -tu2 -j8 -N2 "$1" | tr -d ' '; }
expect "the data 64-byte aligned" 0 $(((10 + $(hlen "$T/x.npy")) % 64))
expect "2 x 3 x 5 x 7 float32 values" $((10 + $(hlen "$T/x.npy") + 4 * 210)) "$(stat -c %s "$T/x.npy")"
expect "the magic and version" "934e554d505901" "$(od -An -tx1 -N7 "$T/x.npy" | tr -d ' ')"
grep -q "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 5, 7, )" "$T/x.npy"; expect "the header" 0 $?
"$fs" run --q "$T/q.npy" --k "$T/k.npy" --v "$T/v.npy" --M 64 > "$T/run.txt" 2>&1; expect "flashstep reads them" 0 $?
$tool 5 "$T/q2.npy" 8 4; cmp -s "$T/q.npy" "$T/q2.npy"; expect "one seed, the same bytes" 0 $?
$tool 6 "$T/q3.npy" 8 4; cmp -s "$T/q.npy" "$T/q3.npy"; expect "another seed, other bytes" 1 $?
$tool 5 "$T/bad.npy" 8 x > "$T/err" 2>&1; expect "a dimension that is no number: exit 2" 2 $?
expect "with one error line" 1 "$(wc -l < "$T/err")"
[ -e "$T/bad.npy" ]; expect "and no file" 1 $?
$tool 5 "$T/first.npy" 4 4 -- "$T/second.npy" 0 4 > "$T/err" 2>&1; expect "a later bad group: exit 2" 2 $?
[ -e "$T/first.npy" ]; expect "and not even the good group's file" 1 $?
$tool 5 > "$T/err" 2>&1; expect "no path: exit 2" 2 $?
[ "$bad" -eq 0 ] && echo "npy_random ok"
exit "$bad"
