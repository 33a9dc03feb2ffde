# Sourced by gpu/run_on_device.sh and gpu/device_check.sh: the summary file and the rule that a
# failed step stops the device call. A step's exit code is noted in the summary; when it is not
# the one expected the summary so far is printed and the script exits 1, so a failure cannot
# scroll past in a log. FLASHSTEP_REQUIRE_GPU=1 (the default here) makes the [gpu] tests fail
# instead of skip when no GPU or driver is found (tests/gpu/gpu_test_helpers.h).
export FLASHSTEP_REQUIRE_GPU=${FLASHSTEP_REQUIRE_GPU:-1}
S=$OUT/summary.txt
: > "$S"
note() { echo "$*" | tee -a "$S"; }
print_summary() { echo "==== summary"; cat "$S"; }
# expect WANT GOT: stop unless the step's exit code GOT is WANT.
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
