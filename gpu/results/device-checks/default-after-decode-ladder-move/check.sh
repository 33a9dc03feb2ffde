#!/usr/bin/env bash
# A short check of the default build after the FP8 decode's variants 11, 12 moved to the ladder.
set -u
cd "$(dirname "$0")/.."
python3 -c "import tarfile; tarfile.open('build-carry/bin.tar.xz').extractall('build-carry/bin')"
export LD_LIBRARY_PATH=$PWD/build-carry/lib FLASHSTEP_REQUIRE_GPU=1 FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
c=$(find /usr/local /usr/lib -name 'libcublasLt.so.13*' 2>/dev/null | head -1); [ -n "$c" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$c")
B=build-carry/bin; FS=$B/flashstep
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 $B/flashstep_gpu_tests "[decode],[fp8],[paged]" 2>&1 | tail -2
for a in "--nq 1 --nk 20000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16" \
         "--nq 1 --nk 12345 --d 64 --dtype fp8 --rotate --pattern outliers --page-size 3 --splits 7" \
         "--nq 3 --nk 5000 --d 128 --dtype bf16 --page-size 16 --kv-len 4000" \
         "--nq 1 --nk 9000 --d 128 --dtype fp8 --variant 11 --page-size 16"; do
  echo "== verify --schedule decode $a"; timeout 30 $FS verify --schedule decode $a 2>&1 | grep -E "^PASS|^FAIL|error"; echo "rc=${PIPESTATUS[0]}"
done
for t in memcheck racecheck synccheck initcheck; do
  timeout 40 compute-sanitizer --tool $t --error-exitcode 9 $FS verify --schedule decode --nq 1 --nk 3000 --d 128 --dtype fp8 --page-size 16 --splits 4 > /tmp/s_$t.txt 2>&1
  echo "$t rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/s_$t.txt | tail -1) $(grep -c '^PASS' /tmp/s_$t.txt) PASS"
done
