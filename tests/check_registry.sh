#!/bin/sh
# The registry rule (docs/internals.md): outside core's schedule registry and the schedules' own
# files, app/ and gpu/ name no particular schedule (Schedule::fa1, "fa2" as a key, ...) and no
# particular pseudocode line (Line::A1_L9, ...); they ask core/schedule_registry.h and decide by
# a line's role. The files listed below are where a particular schedule is the point (the
# kernels and their host code, the GPU's registry); each says why. A single line may be exempted
# with a trailing comment "registry-exempt: REASON" where the schedule is the point (a stored
# file's keys, the tensor-core command that runs FlashAttention-2 only).
# Prints each breach and fails if there is one.
# Usage: check_registry.sh SOURCE_ROOT
root=${1:?usage: check_registry.sh SOURCE_ROOT}
cd "$root" || exit 2

# Files allowed to name a schedule: the kernels and their host code (one schedule each, or the
# launcher of all of them) and the GPU backend's registry.
allowed='^gpu/(fa1_forward|fa1_backward|fa2_forward|fa2_backward|standard_backward|fa2_tc|fa2_wgmma|standard_tc|matmul|row_softmax)\.cu:|^gpu/(backend|backward|schedules)\.cpp:|^gpu/[a-z_0-9]+\.cuh:'

status=0
report() {
  hits=$(printf '%s\n' "$2" | grep -vE "$allowed" | grep -v 'registry-exempt:' | grep -v '^$')
  if [ -n "$hits" ]; then
    echo "registry rule broken: $1"
    printf '%s\n' "$hits"
    status=1
  fi
}

src() { find app gpu -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort; }

report "a particular schedule named (ask core/schedule_registry.h):" \
  "$(src | xargs grep -nE 'Schedule::(fa1|fa2|standard)\b')"
report "a particular pseudocode line named (decide by line_role()):" \
  "$(src | xargs grep -nE 'Line::[A-Z][A-Z0-9]*_')"
report "a line tested by its number (decide by line_role() or line_algorithm()):" \
  "$(src | xargs grep -nE 'int\((s|cur|st|t)?\.?(->)?line\)|static_cast<int>\([a-z.>-]*line\)')"
report "a schedule's name as a string (use ScheduleInfo::name):" \
  "$(src | xargs grep -nE '"(fa1|fa2|standard)"' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//')"
report "an array sized by the number of schedules (loop over schedules()):" \
  "$(src | xargs grep -nE '(runs|cols|scheds|forms|kSchedules)\[3\]')"

[ $status -eq 0 ] && echo "registry ok: app/ and gpu/ ask the schedule registry"
exit $status
