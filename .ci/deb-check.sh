#!/usr/bin/env bash
# The Debian package, built and checked for real on this machine (docs/packaging.md): build it
# with CPack, lintian it (no errors), install it with apt-get, run the installed program from
# another folder with the source tree hidden, compare its app screenshot with the build tree's,
# read its manual page, run its menu entry's Exec line, import its Python module (when the build
# has one) and run a small problem with it, then remove it and check that nothing is
# left under /usr/share/flashstep. Needs root (or sudo) on Debian 12; .ci/run calls it after the
# main tests, so build/ exists. The package is removed when the check ends, passed or failed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
fail() { echo "deb-check: FAILED: $*" >&2; exit 1; }

# The check's own tools (not the package's dependencies).
tools=(lintian desktop-file-utils man-db xvfb xauth)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $sudo apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
if dpkg-query -W -f='${Status}' flashstep 2>/dev/null | grep -q "install ok installed"; then
  fail "flashstep is already installed here (apt-get remove flashstep first): the check installs its own"
fi

# [1] Build. build/ packs as it is when it has no CUDA backend (setup.sh on a machine without
# nvcc: packing costs seconds); otherwise build-deb/, configured without CUDA and tests.
tree=build
if ! ./build/app/flashstep --version | grep -q "GPU backend: no"; then
  tree=build-deb
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DFLASHSTEP_CUDA=OFF -DFLASHSTEP_TESTS=OFF \
    "${launcher[@]}" >/dev/null
fi
echo "deb-check: packing from $tree/"
cmake --build "$tree" -j"$(nproc)" --target package >/dev/null
version=$("$tree/app/flashstep" --version | awk '{print $2}')
deb="$src/$tree/flashstep_${version}_$(dpkg --print-architecture).deb"
[ -f "$deb" ] || fail "$deb not written (the name carries the version flashstep --version prints: $version)"
echo "deb-check: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"
# The Python module goes in when the build tree has it (pybind11-dev and python3-dev found).
pydir=usr/lib/python3/dist-packages/flashstep
python_module=no
if [ -f "$tree/python/flashstep/__init__.py" ]; then python_module=yes; fi

# [2] What is in it: the files the package promises, no maintainer scripts (nothing is written
# outside the package's files, into no home), Depends from dpkg-shlibdeps with no CUDA library,
# and each Depends package named in the copyright file.
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/flashstep ./usr/share/flashstep/assets/presets/tiny.json \
         ./usr/share/flashstep/assets/bench/h200.json ./usr/share/flashstep/shaders/heatmap.frag \
         ./usr/share/applications/flashstep.desktop ./usr/share/icons/hicolor/scalable/apps/flashstep.svg \
         ./usr/share/icons/hicolor/48x48/apps/flashstep.png ./usr/share/icons/hicolor/256x256/apps/flashstep.png \
         ./usr/share/man/man1/flashstep.1.gz ./usr/share/doc/flashstep/copyright ./usr/share/doc/flashstep/changelog.gz; do
  grep -qxF "$f" <<<"$contents" || fail "the package has no $f"
done
if [ "$python_module" = yes ]; then
  for f in "$tree"/python/flashstep/*.py; do
    grep -qxF "./$pydir/$(basename "$f")" <<<"$contents" || fail "the package has no /$pydir/$(basename "$f")"
  done
  grep -qE "^\./$pydir/_core\.cpython-[0-9]+-.*\.so$" <<<"$contents" || fail "the package has no /$pydir/_core*.so"
fi
control=$(mktemp -d)
trap 'rm -rf "$control"' EXIT
dpkg-deb -e "$deb" "$control"
scripts=$(find "$control" -mindepth 1 ! -name control ! -name md5sums -printf '%f ')
[ -z "$scripts" ] || fail "the package has maintainer scripts: $scripts"
depends=$(dpkg-deb -f "$deb" Depends)
echo "deb-check: Depends: $depends"
grep -qi 'cublas\|cuda' <<<"$depends" && fail "Depends names a CUDA library"
if [ "$python_module" = yes ]; then
  for p in python3 python3-numpy; do
    tr ',' '\n' <<<"$depends" | grep -qE "^ *$p( |\$)" || fail "the package has the Python module but Depends has no $p"
  done
fi
for p in $(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//' | tr -d ' '); do
  grep -qwF -- "$p" packaging/copyright || fail "Depends has $p, which packaging/copyright does not list"
done

# [3] lintian: errors fail the check; the warnings are printed.
echo "deb-check: lintian"
lintian --fail-on error --display-info "$deb" || fail "lintian reports errors on the package"

# [4] Install with apt-get, as a teacher would. From here on the package is removed at exit.
work=$(mktemp -d)
cleanup() {
  rm -rf "$control" "$work"
  if dpkg-query -W -f='${Status}' flashstep 2>/dev/null | grep -q "install ok installed"; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 remove -y -qq flashstep >/dev/null || true
  fi
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$deb" >/dev/null
[ "$(command -v flashstep)" = /usr/bin/flashstep ] || fail "flashstep on PATH is $(command -v flashstep), not /usr/bin/flashstep"
desktop-file-validate /usr/share/applications/flashstep.desktop

# [5] The installed program, run from another folder with a fresh home, and the source tree hidden
# under an empty tmpfs (a private mount namespace), so that whatever it reads comes from
# /usr/share/flashstep. Its output must equal the build tree's.
mkdir -p "$work/home" "$work/run"
cd "$work/run"
export HOME="$work/home"
xvfb=(xvfb-run -a -s "-screen 0 1600x1000x24")
# shellcheck disable=SC2016  # the inner shell expands its own arguments
hidden() { $sudo unshare --mount sh -c 'mount -t tmpfs none "$1" && shift && cd "$1" && shift && HOME="$1" && shift && export HOME && exec "$@"' \
  hidden "$src" "$work/run" "$HOME" "$@"; }
if ! hidden true 2>/dev/null; then
  echo "deb-check: cannot hide the source tree here (unshare --mount refused); the installed program runs with it visible"
  hidden() { "$@"; }
fi
same_output() {  # the installed program and the build tree's print the same
  local installed built
  installed=$(hidden flashstep "$@") || fail "flashstep $* (installed) failed"
  built=$("$src/$tree/app/flashstep" "$@") || fail "flashstep $* (build tree) failed"
  [ "$installed" = "$built" ] || fail "flashstep $* prints differently installed and from the build tree"
  echo "deb-check: flashstep $* ok ($(wc -l <<<"$installed") lines)"
}
same_output --version
same_output lesson softmax
same_output learn --list
same_output run --n 8 --d 4 --M 64
same_output learn memory-bound --answers   # reads the bench file under assets/bench
same_output learn fp8 --answers            # and the FP8 forward's, beside it

# The app's screenshot, installed and from the build tree: the same program on the same data
# writes the same PNG, byte for byte.
shot() {  # shot installed|built OUT.png GUI-ARGS...: one screenshot under Xvfb
  local where=$1 out=$2; shift 2
  if [ "$where" = installed ]; then
    hidden "${xvfb[@]}" flashstep "$@" --screenshot "$out" >/dev/null
  else
    "${xvfb[@]}" "$src/$tree/app/flashstep" "$@" --screenshot "$out" >/dev/null
  fi
  [ -s "$out" ] || fail "no screenshot from flashstep $* ($where)"
}
shot installed "$work/installed.png" gui --preset tiny --step 19
shot built "$work/built.png" gui --preset tiny --step 19
cmp -s "$work/installed.png" "$work/built.png" ||
  fail "the installed app's screenshot differs from the build tree's ($work/installed.png, $work/built.png)"
echo "deb-check: gui --preset tiny --step 19: the same screenshot installed and from the build tree"

# The manual page.
MANPAGER="cat" man flashstep >"$work/man.txt" || fail "man flashstep failed"
grep -q "flashstep learn" "$work/man.txt" || fail "man flashstep has no 'flashstep learn' section"
echo "deb-check: man flashstep ok ($(wc -l <"$work/man.txt") lines)"

# The menu entry's Exec line, as the desktop runs it: the window stays open (5 s) until closed;
# with --screenshot added it draws the same picture as the build tree's `gui`.
exec_line=$(sed -n 's/^Exec=//p' /usr/share/applications/flashstep.desktop)
[ -n "$exec_line" ] || fail "the .desktop entry has no Exec line"
[ "${exec_line%% *}" = flashstep ] || fail "the Exec line ($exec_line) does not run flashstep"
hidden "${xvfb[@]}" sh -c "$exec_line & pid=\$!; sleep 5; kill -0 \$pid || exit 1; kill \$pid; wait \$pid 2>/dev/null; exit 0" ||
  fail "the menu entry's Exec line ($exec_line) did not keep a window open"
# shellcheck disable=SC2086  # the Exec line's words after the program, as the desktop splits them
shot installed "$work/menu.png" ${exec_line#flashstep }
# shellcheck disable=SC2086
shot built "$work/menu-built.png" ${exec_line#flashstep }
cmp -s "$work/menu.png" "$work/menu-built.png" || fail "the menu entry's window differs from the build tree's"
echo "deb-check: the menu entry's Exec line ($exec_line) opens the app"

# The Python module, imported by Debian's python3 (/usr/bin/python3, not another one first on
# PATH, such as pyenv's) from the package's folder, without PYTHONPATH:
# one small run, whose bytes and output must equal the build tree's module's. No bytecode is
# written (PYTHONDONTWRITEBYTECODE): python3 run as root would leave a __pycache__ folder in
# the package's folder, which apt-get remove does not delete.
if [ "$python_module" = yes ]; then
  # shellcheck disable=SC2016  # the program is Python, not shell
  py_run='import flashstep, numpy as np
r = flashstep.run(n=8, d=4, M=64, schedule="fa2")
print(flashstep.__file__.rsplit("/", 2)[0], r.hbm_read_bytes, r.hbm_write_bytes, r.tiling, len(r.steps), np.float32(r.o).tobytes().hex())'
  installed=$(hidden env -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c "$py_run") ||
    fail "python3 -c 'import flashstep; flashstep.run(...)' failed with the package installed"
  [ "${installed%% *}" = "/$(dirname "$pydir")" ] || fail "python3 imported flashstep from ${installed%% *}, not /$(dirname "$pydir")"
  built=$(cd "$src" && PYTHONPATH="$src/$tree/python" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c "$py_run")
  [ "${installed#* }" = "${built#* }" ] || fail "the installed Python module's run differs from the build tree's"
  echo "deb-check: python3 -c 'import flashstep; flashstep.run(n=8, d=4, M=64, schedule=\"fa2\")' ok (the build tree's bytes and output)"
fi

# [6] Remove: nothing left under /usr/share/flashstep, no /usr/bin/flashstep, no Python module.
cd "$src"
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 remove -y -qq flashstep >/dev/null
[ ! -e /usr/share/flashstep ] || fail "/usr/share/flashstep is left after apt-get remove: $(find /usr/share/flashstep | head)"
[ ! -e "/$pydir" ] || fail "/$pydir is left after apt-get remove: $(find "/$pydir" | head)"
[ ! -e /usr/bin/flashstep ] || fail "/usr/bin/flashstep is left after apt-get remove"
echo "deb-check: removed, nothing left under /usr/share/flashstep"
echo "deb-check: passed"
