#!/usr/bin/env bash
# Device calls for the tensor-core backward (gpu/fa2_bwd_tc.cu). Run from the repository root on
# the GPU machine with flashstep and flashstep_tc_tests in $BIN (default .dev/bwdtc/bin); logs
# under $OUT. Steps (any order, each logged, a summary last):
#   tests        [tc_backward] in three processes (all backward variants, bf16/fp16, d 64/128)
#   sanitize     compute-sanitizer memcheck and racecheck on [tc_backward][small]
#   cli          verify --backward --tensor-cores on ragged / causal / padded shapes, bf16 and fp16;
#                gpu --backward --tensor-cores with --do and the outputs; a bad request
#   ladder       bench-gpu --backward --tensor-cores --n 4096 for each backward variant
#   bench        bench-gpu --backward --tensor-cores (B 16, H 16, N 4096 16384, d 64 128),
#                non-causal and causal, then PyTorch's flash and cuDNN backends on the same shapes
#   sdpa4096     PyTorch alone at N = 4096 (cheap)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUT=${OUT:-/tmp/bwdtc}
BIN=${BIN:-.dev/bwdtc/bin}
mkdir -p "$OUT"
dev_libs "$BIN"
FS=$BIN/flashstep
dev_gpu_env | tee "$OUT/gpu.txt"
summary=()
for step in "$@"; do
  t0=$(date +%s)
  case "$step" in
    tests)  # every variant on [small]; the larger cases on $BWD_VARIANTS (default: all)
      catch2 "$OUT/tests_small.log" timeout 200 "$BIN/flashstep_tc_tests" "[tc_backward][small]" &
      for part in "[tc_backward]~[small]~*causal*" "*causal and key padding*"; do
        FLASHSTEP_TC_BWD_VARIANTS=${BWD_VARIANTS:-} catch2 "$OUT/tests_$(echo "$part" | tr -dc a-z).log" \
          timeout 200 "$BIN/flashstep_tc_tests" "$part" &
      done
      wait_jobs; rc=$?
      cat "$OUT"/tests_*.log > "$OUT/tc_backward_tests.log"; rm -f "$OUT"/tests_*.log
      summary+=("tests: rc=$rc $(parts_line "$OUT/tc_backward_tests.log")")
      ;;
    sanitize)
      export FLASHSTEP_TC_BWD_VARIANTS=${BWD_VARIANTS:-}
      catch2 "$OUT/memcheck.log" \
        timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/flashstep_tc_tests" "[tc_backward][small]"
      summary+=("memcheck [tc_backward][small]: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)")
      catch2 "$OUT/racecheck.log" timeout 150 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
        "$BIN/flashstep_tc_tests" "[tc_backward][small]"
      summary+=("racecheck [tc_backward][small]: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)")
      unset FLASHSTEP_TC_BWD_VARIANTS
      ;;
    cli)  # CLI_SHAPES (;-separated) overrides the verify shapes
      IFS=';' read -r -a shapes <<< "${CLI_SHAPES:-"--nq 300 --nk 517 --d 64;--nq 517 --nk 300 --d 128 --causal;\
--nq 333 --nk 333 --d 64 --kv-len 250;--nq 1000 --nk 1000 --d 128 --causal --kv-len 900;--nq 1 --nk 3 --d 64;\
--nq 700 --nk 500 --d 64 --causal --variant 2;--nq 600 --nk 600 --d 64 --variant 3 --pattern large"}"
      {
        for dt in bf16 fp16; do
          for args in "${shapes[@]}"; do
            echo "== verify --backward --tensor-cores --dtype $dt $args"
            timeout 60 "$FS" verify --backward --tensor-cores --dtype "$dt" $args; echo "rc=$?"
          done
        done
        echo "== gpu --backward --tensor-cores --dtype bf16 --q/--k/--v/--do (2, 3, 200, 64)"
        timeout 60 "$FS" gpu --backward --tensor-cores --dtype bf16 --causal --q "$BIN/q.npy" --k "$BIN/k.npy" \
          --v "$BIN/v.npy" --do "$BIN/do.npy" --out-o "$OUT/o.npy" --out-dq "$OUT/dq.npy" --out-dk "$OUT/dk.npy" \
          --out-dv "$OUT/dv.npy"; echo "rc=$?"
        echo "== bad request (d = 96)"
        timeout 20 "$FS" gpu --backward --tensor-cores --dtype bf16 --n 64 --d 96; echo "rc=$?"
      } > "$OUT/cli.txt" 2>&1
      summary+=("cli: $(grep -c '^PASS' "$OUT/cli.txt") PASS, $(grep -c '^FAIL' "$OUT/cli.txt") FAIL, rc lines: $(grep '^rc=' "$OUT/cli.txt" | tr '\n' ' ')")
      ;;
    ladder)
      for v in ${LADDER:-1 2 3 4}; do
        ds="64 128"; [ $v = 3 ] && ds=64
        timeout 120 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 --d $ds --variant $v --no-fp32 \
          --json-file "$OUT/ladder_v$v.json" >> "$OUT/ladder.txt" 2>&1
        timeout 120 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --causal --n 4096 --d $ds --variant $v --no-fp32 \
          --json-file "$OUT/ladder_v${v}_causal.json" >> "$OUT/ladder.txt" 2>&1
        summary+=("ladder v$v: rc=$?")
      done
      ;;
    bench)
      timeout 240 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --json-file "$OUT/bench_bf16.json" \
        > "$OUT/bench.txt" 2>&1
      summary+=("bench bf16: rc=$?")
      timeout 200 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --causal --json-file \
        "$OUT/bench_bf16_causal.json" >> "$OUT/bench.txt" 2>&1
      summary+=("bench bf16 causal: rc=$?")
      timeout 300 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 > "$OUT/sdpa.txt" 2>&1
      summary+=("sdpa: rc=$?")
      ;;
    sdpa4096)
      timeout 100 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --ns 4096 > "$OUT/sdpa4096.txt" 2>&1
      summary+=("sdpa 4096: rc=$?")
      ;;
    *) summary+=("unknown step $step") ;;
  esac
  summary+=("  ($step: $(($(date +%s) - t0)) s)")
done
grep -B3 -A14 -E "FAILED|failed" "$OUT"/tc_backward_tests.log 2>/dev/null | head -80
grep -E "Invalid|out of bounds|Race|hazard" "$OUT"/memcheck.log "$OUT"/racecheck.log 2>/dev/null | sort | uniq -c | head
printf '%s\n' "${summary[@]}"
for f in ladder.txt bench.txt sdpa4096.txt sdpa.txt; do [ -f "$OUT/$f" ] && cat "$OUT/$f"; done
grep -E "^(==|GPU vs|PASS|FAIL|rc=)" "$OUT/cli.txt" 2>/dev/null | head -120
# The call returns a few files only: everything in one archive.
(cd "$OUT" && tar czf all_logs.tgz --exclude all_logs.tgz --exclude '*.npy' . )
printf '%s\n' "${summary[@]}"
