# Sourced by the shell checks (tests/check_*.sh): `expect WHAT WANT GOT` prints "ok: WHAT", or
# "FAIL: ..." with both values and sets bad=1; the check exits with $bad.
bad=0
expect() {  # WHAT WANT GOT
  if [ "$2" != "$3" ]; then echo "FAIL: $1: expected $2, got $3"; bad=1; else echo "ok: $1"; fi
}
