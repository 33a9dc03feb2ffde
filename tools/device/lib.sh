# tools/device/lib.sh: the set-up and checks every device script shares. Source it first:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The scripts run from the repository root on the GPU machine, with binaries built on the CPU
# machine (static CUDA runtime, Catch2 compiled in) carried beside the tree.
#
#   dev_unpack DIR          extracts DIR/bin.tar.xz (the carried binaries) into DIR/bin
#   dev_libs [DIR...]       LD_LIBRARY_PATH: each DIR first (a carried lib/ with libstb, a folder
#                           of shared objects), then the toolkit's cuBLAS (the tensor-core path
#                           opens it for standard attention)
#   dev_gpu_env             FLASHSTEP_REQUIRE_GPU=1 (a [gpu]/[tc] test without a GPU fails instead
#                           of skipping), FLASHSTEP_GOLDEN_DIR (tests/golden), PYTHONPATH (the
#                           summary helpers here and gpu/tools' PyTorch timers); prints the GPU
#   dev_setup "$0" BIN OUT  the usual start: dev_libs, dev_args, dev_gpu_env into $OUT/gpu.txt,
#                           FS (the flashstep binary in BIN)
#   dev_args "$0" BIN OUT   the usual two arguments: BIN (the binaries), OUT (the logs, made);
#                           T0 (the start), S=() (the summary lines)
#   start_rung_tests SECS V...  the forward rungs' [tc] tests, four processes per rung V in the
#                           background (FLASHSTEP_TC_VARIANTS=V; -d yes: each case's duration),
#                           into $OUT/tc_vV_TAG.log; a process killed by its timeout shows as one
#                           failed test case ("fatal error condition: SIGTERM")
#   bench_rungs LIMIT V...  the forward ladder's speed phase, alone on the GPU: each V (a rung, or
#                           "sdpa" for PyTorch's cuDNN backend on the same shapes) at d = 64, 128,
#                           N = 4096, 16384, bf16, causal and not, into $OUT/bench.txt and
#                           $OUT/sdpa.txt, one line per step in S; a rung whose tests failed
#                           (OK[V] set, not PASS) is not timed; nothing starts LIMIT s after T0
#   tc_failure LOG          the first failed assertion of a Catch2 log with its message (INFO:
#                           variant, type, d, shape, seed)
#   rung_verdict V FILE...  rung V's verdict from its [tc] logs ($OUT/tc_vV_*.log, all passed) and
#                           its verify outputs FILE... (last line rc=0): OK[V] = PASS or FAIL (OK is
#                           an associative array the caller declares), and in S the per-process
#                           counts ("ok A/C": A assertions in C test cases), durations and the first
#                           failure of each failed log
#   gpu_line                the GPU's name, driver and clocks, one line
#   catch2 LOG CMD...       runs CMD (a Catch2 binary, possibly behind timeout or
#                           compute-sanitizer) into LOG; its exit code, or 3 when it ran no
#                           assertion ("assertions: - none -", "No tests ran"): a skip is not a pass
#   catch2_line LOG         the count line of a Catch2 log ("All tests passed ..." / "test cases: ...")
#   parts_line LOG          the count lines of several Catch2 logs cat into LOG, joined by ';'
#                           (a part that ran no assertion is named)
#   tests_line LOG RC       "rc=RC" and the count line; FAIL when no test matched or none asserted
#   wait_jobs               waits for every background job; the last non-zero exit code, or 0
#   sanitized LOG           compute-sanitizer's summary line in LOG
#   fwd_bench BIN FILE SECS the forward's defaults (BIN/flashstep) at the speed targets' 8 points:
#                           bf16, N = 4096 and 16384, d = 64 and 128, non-causal then causal (each
#                           half under timeout SECS), 10 calls back to back, added to FILE
#   fwd_bench_cudnn FILE SECS  PyTorch's cuDNN forward at the same points, the same way
#   sanitize_many PREFIX D CMD...  the four compute-sanitizer tools side by side on more (head,
#                           K/V block) tiles than the H200's 132 SMs, so that a thread block or a
#                           persistent block takes several in turn: B x H = 3 x 16 heads of 64
#                           queries and 1000 keys at head size D (npy_random.py's inputs), causal,
#                           batch entry 1 keeping no key and entry 2 300. CMD is the command
#                           before its input flags; PREFIX_TOOL.txt is each tool's output, ending
#                           "rc=N"; the inputs are removed after
#   verdict RC              PASS, or FAIL(rc=RC)
#   note TEXT / expect WANT GOT / expect_refusal GOT MESSAGE / print_summary
#                           the summary file $S (default $OUT/summary.txt) and the rule that a
#                           failed step stops the call: a step whose exit code is not the one
#                           expected prints the summary so far and exits 1
#   summary_table LINES...  prints the lines and writes them to $OUT/summary.txt
#   say TEXT                a summary line kept in S and appended to $OUT/summary.txt as it happens
#   before SECS WHAT        true while fewer than SECS seconds have passed since T0; else says
#                           "skipped (past SECS s): WHAT" and is false (a step of a budgeted call)
#   ROOF_REF                4553 (GB/s): the H200's read roof as bench-gpu measured it, the
#                           reference of the decode targets' "% of the read roof"
DEV_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

dev_unpack() {
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1] + '/bin.tar.xz').extractall(sys.argv[1] + '/bin')" "$1"
}

dev_libs() {
  local d cublas
  for d in "$@"; do
    case "$d" in /*) ;; *) d=$PWD/$d ;; esac
    export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  done
  cublas=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
  [ -n "$cublas" ] && export LD_LIBRARY_PATH=$(dirname "$cublas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  return 0
}

dev_args() {
  local usage="usage: $(basename "$1") BIN OUT"
  BIN=${2:?$usage}
  OUT=${3:?$usage}
  mkdir -p "$OUT"
  T0=$(date +%s)
  S=()
}

dev_setup() {
  dev_libs
  dev_args "$@"
  dev_gpu_env > "$OUT/gpu.txt"
  FS=$BIN/flashstep
}

start_rung_tests() {
  local secs=$1 v part
  shift
  for v in "$@"; do
    for part in "[tc][ragged],[tc][padding]" "[tc][causal],[tc][small]" "[tc][ring]" "[tc][persistent]"; do
      FLASHSTEP_TC_VARIANTS=$v catch2 "$OUT/tc_v${v}_$(echo "$part" | tr -dc a-z).log" \
        timeout "$secs" "$BIN/flashstep_tc_tests" -d yes "$part" &
    done
  done
}

bench_rungs() {
  local limit=$1 v c
  shift
  late() { [ $(($(date +%s) - T0)) -gt "$limit" ] && S+=("$1: skipped (the ${limit} s budget spent)"); }
  : > "$OUT/bench.txt"
  : > "$OUT/sdpa.txt"
  for v in "$@"; do
    if [ "$v" = sdpa ]; then
      for c in "" "--causal"; do
        late "sdpa cudnn ${c:-non-causal}" && continue
        timeout 25 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 $c >> "$OUT/sdpa.txt" 2>&1
        S+=("sdpa cudnn ${c:-non-causal}: rc=$?")
      done
      continue
    fi
    # A rung that failed its tests is not timed (it cannot become a default; a hang would cost 25 s).
    if [ -n "${OK[$v]+x}" ] && [ "${OK[$v]}" != PASS ]; then S+=("bench v$v: skipped (tests failed)"); continue; fi
    late "bench v$v" && continue
    timeout 25 "$BIN/flashstep_tc_bench" --no-verify --no-standard --variants "$v" --ds 64,128 --ns 4096,16384 \
      --dtypes bf16 --causal both >> "$OUT/bench.txt" 2>&1
    S+=("bench v$v: rc=$?")
  done
}

tc_failure() { grep -E -m1 -A8 'FAILED|fatal error' "$1" | grep -vE '^[-.=]+$' | cut -c1-160 | tr -s ' \n' ' '; }

rung_verdict() {
  local v=$1 res=PASS f
  shift
  for f in "$OUT"/tc_v${v}_*.log; do grep -q "^All tests passed" "$f" || res=FAIL; done
  for f in "$@"; do [ "$(tail -1 "$f")" = rc=0 ] || res=FAIL; done
  OK[$v]=$res
  S+=("v$v [tc] + verify: $res | $(cat "$OUT"/tc_v${v}_*.log | grep -E '^(All tests passed|test cases:)' |
    sed -E 's/All tests passed \(([0-9]+) assertions? in ([0-9]+) test cases?\)/ok \1\/\2/' | tr '\n' ';')")
  S+=("v$v [tc] durations: $(cat "$OUT"/tc_v${v}_*.log | grep -E '^[0-9.]+ s: ' | cut -d: -f1-2 | cut -c1-50 | tr '\n' ';')")
  for f in "$OUT"/tc_v${v}_*.log; do
    grep -q "^All tests passed" "$f" || S+=("  $(basename "$f") first failure: $(tc_failure "$f")")
  done
}

gpu_line() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1; }

dev_gpu_env() {
  export FLASHSTEP_REQUIRE_GPU=1
  export FLASHSTEP_GOLDEN_DIR=${FLASHSTEP_GOLDEN_DIR:-$PWD/tests/golden}
  export PYTHONPATH=$DEV_LIB_DIR:$PWD/gpu/tools${PYTHONPATH:+:$PYTHONPATH}
  gpu_line
}

catch2() {
  local log=$1 rc
  shift
  "$@" > "$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && grep -qE "assertions: - none -|No tests ran" "$log"; then
    echo "catch2 (tools/device/lib.sh): no assertion ran; a skip is not a pass" >> "$log"
    rc=3
  fi
  return "$rc"
}

catch2_line() {
  local line
  line=$(grep -E '^(All tests passed|test cases:|No tests ran)' "$1" 2>/dev/null | tail -1)
  grep -q "no assertion ran; a skip is not a pass" "$1" 2>/dev/null && line="$line (no assertion ran: FAIL)"
  echo "$line"
}

parts_line() {
  grep -E '^(All tests passed|test cases:|No tests ran)|no assertion ran' "$1" 2>/dev/null | tr '\n' ';'
}

tests_line() {
  if grep -qE "No tests ran|assertions: - none -" "$1"; then echo "rc=$2 FAIL: no test matched the filter or none asserted"; return; fi
  echo "rc=$2 $(grep -E '^(All tests passed|test cases:)' "$1" | tail -1)"
}

wait_jobs() {
  local p rc=0
  for p in $(jobs -p); do wait "$p" || rc=$?; done
  return "$rc"
}

sanitized() { grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$1" | tail -1; }
fwd_bench() {
  local c rc=0
  for c in "" "--causal"; do
    timeout "$3" "$1" bench-gpu --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-sweep --back-to-back 10 $c \
      >> "$2" 2>&1 || rc=$?
  done
  return $rc
}
fwd_bench_cudnn() {
  local c rc=0
  for c in "" "--causal"; do
    timeout "$2" python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 --back-to-back 10 $c \
      >> "$1" 2>&1 || rc=$?
  done
  return $rc
}
sanitize_many() {
  local prefix=$1 d=$2 tool pids=() extra
  shift 2
  python3 "$DEV_LIB_DIR/npy_random.py" 7 "${prefix}_q.npy" 3 16 64 "$d" -- "${prefix}_k.npy" 3 16 1000 "$d" -- \
    "${prefix}_v.npy" 3 16 1000 "$d" || return 1
  for tool in memcheck racecheck synccheck initcheck; do
    extra=""; [ $tool = racecheck ] && extra="--racecheck-report all"
    (timeout 120 compute-sanitizer --tool $tool $extra --error-exitcode 9 "$@" --causal --q "${prefix}_q.npy" \
       --k "${prefix}_k.npy" --v "${prefix}_v.npy" --kv-lens 1000 0 300; echo "rc=$?") > "${prefix}_$tool.txt" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  rm -f "${prefix}_q.npy" "${prefix}_k.npy" "${prefix}_v.npy"
}
verdict() { [ "$1" = 0 ] && echo PASS || echo "FAIL(rc=$1)"; }

note() { echo "$*" | tee -a "${S:-$OUT/summary.txt}"; }
say() { S+=("$*"); printf '%s\n' "$*" >> "$OUT/summary.txt"; }
before() { [ $(($(date +%s) - T0)) -lt "$1" ] || { say "skipped (past $1 s): $2"; return 1; }; }
ROOF_REF=4553
print_summary() { echo "==== summary"; cat "${S:-$OUT/summary.txt}"; }
expect() {
  if [ "$2" -ne "$1" ]; then
    note "STOPPED: the step above exited $2, expected $1"
    print_summary
    exit 1
  fi
}
# expect_refusal GOT MESSAGE: bad input must give exit 2 and one line "flashstep: error: ...".
expect_refusal() {
  expect 2 "$1"
  case "$2" in
    "flashstep: error: "*) ;;
    *) note "STOPPED: the refusal above is not one 'flashstep: error:' line"; print_summary; exit 1 ;;
  esac
  if [ "$(printf '%s\n' "$2" | wc -l)" -ne 1 ]; then
    note "STOPPED: the refusal above has more than one line"; print_summary; exit 1
  fi
}

summary_table() { printf '%s\n' "$@" | tee "$OUT/summary.txt"; }
