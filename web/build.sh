#!/usr/bin/env bash
# Builds flashstep's web page into build-web/: index.html, flashstep.js, flashstep.wasm and
# flashstep.data (presets, bench results, shaders, fonts). Serve it with
#   python3 -m http.server -d build-web     (then open http://localhost:8000/?preset=tiny&step=19)
# Needs Debian's emscripten (3.1.6), Eigen, nlohmann-json, CLI11 and DejaVu fonts; Dear ImGui's
# sources (with its GLFW and OpenGL3 backends) come from Debian's source package, fetched with
# `apt-get source imgui` into build-web/src (a deb-src line is enabled for it when none is).
# Nothing third-party is committed. Compiles with make (objects in build-web/obj, rebuilt when a
# source or header changes). Details: docs/web.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-web
jobs="${JOBS:-$(nproc)}"  # JOBS=1 on a machine shared with other builds
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
took() { echo "web: $1 in $((SECONDS - t0)) s"; t0=$SECONDS; }  # each step's time, for CI's budget
t0=$SECONDS

# 1. Packages.
packages=(emscripten libeigen3-dev nlohmann-json3-dev libcli11-dev libstb-dev fonts-dejavu-core dpkg-dev make)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "web: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

took "packages"

# 2. Dear ImGui's sources from Debian's source package (the binary package has only the headers
#    and a desktop library).
imgui_dir="$out/src/imgui"
if [ ! -f "$imgui_dir/imgui.cpp" ]; then
  if ! grep -rqs "^Types:.*deb-src\|^deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "web: enabling Debian's source packages (deb-src) for apt-get source imgui"
    uris=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    printf 'Types: deb-src\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "${uris:-http://deb.debian.org/debian}" | $sudo tee /etc/apt/sources.list.d/debian-src.sources >/dev/null
    $sudo apt-get update -qq
  fi
  rm -rf "$out/src" && mkdir -p "$out/src"
  (cd "$out/src" && apt-get source -qq imgui >/dev/null 2>&1) || { echo "web: apt-get source imgui failed" >&2; exit 1; }
  mv "$out"/src/imgui-*/ "$imgui_dir"
fi

took "Dear ImGui's sources"

# 3. Headers from Debian's packages, each by its own folder (adding /usr/include itself would
#    mix the host's C library into emscripten's).
mkdir -p "$out/include"
for d in nlohmann CLI stb; do ln -sfn "/usr/include/$d" "$out/include/$d"; done

# 4. Compile and link.
cp web/index.html "$out/index.html"
# emscripten's JS optimiser (acorn, terser) is in Debian's node modules, not on node's default path.
export NODE_PATH=/usr/share/nodejs
make -s -f web/Makefile -j"$jobs" OUT="$out" IMGUI="$imgui_dir"
took "compile and link (the first build also makes emscripten's system libraries)"
ls -l "$out"/index.html "$out"/flashstep.{js,wasm,data} | awk '{printf "web: %-28s %9d bytes\n", $9, $5}'
