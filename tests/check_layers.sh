#!/bin/sh
# The dependency rule of the layers (see docs/internals.md, "The layers"): core/ includes nothing
# from app/ or gpu/; gpu/ includes nothing from app/ and no command-line library; the GPU
# backend's target does not link CLI11. The ladder's tests (gpu/ladder/tests/) are tests, which
# sit above every layer as tests/ does, so they may include app/. Prints each breach and fails if there is one.
# Usage: check_layers.sh SOURCE_ROOT
root=${1:?usage: check_layers.sh SOURCE_ROOT}
# A folder without the layers is not a tree that keeps the rule: grep would find nothing in it.
for layer in core gpu app; do
  [ -d "$root/$layer" ] || { echo "check_layers.sh: $root/$layer is not a folder (give the source root)"; exit 2; }
done
[ -f "$root/gpu/CMakeLists.txt" ] || { echo "check_layers.sh: no $root/gpu/CMakeLists.txt"; exit 2; }
status=0
breach() { echo "layer rule broken: $1"; status=1; }

hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](app|gpu)/' "$root/core") &&
  breach "core/ includes app/ or gpu/:
$hits"
hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](app/|CLI/)' "$root/gpu" | grep -v "^$root/gpu/ladder/tests/") &&
  breach "gpu/ includes app/ or CLI11:
$hits"
hits=$(grep -nE 'CLI11' "$root/gpu/CMakeLists.txt") &&
  breach "gpu/CMakeLists.txt links CLI11:
$hits"

[ $status -eq 0 ] && echo "layers ok: core <- gpu <- app"
exit $status
