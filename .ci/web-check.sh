#!/usr/bin/env bash
# CI stage: the web page (docs/web.md). Builds it with web/build.sh, serves it on loopback and
# loads it in headless Chromium (WebGL2 on SwiftShader):
#   ?preset=tiny&step=19&dump=1  the status line and the state dump against the desktop app's
#                                `gui --preset tiny --step 19 --dump-state` (build/ from setup.sh)
#   ?preset=nope                 a bad link: one visible message line and the default problem
#   ?course=...                  a course page renders (when the app has the course)
#   a screenshot                 not blank (pixel variance); kept in build-web/ci/ to look at
# Prints the page's download size and its time to first frame, and the stage's time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! command -v chromium >/dev/null; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
web/build.sh
ci=build-web/ci
rm -rf "$ci" && mkdir -p "$ci"

# The page's files as a browser downloads them (gzip, as a server compresses them).
total=0
for f in index.html flashstep.js flashstep.wasm flashstep.data; do
  total=$((total + $(gzip -9 -c "build-web/$f" | wc -c)))
done
echo "web-check: download $(du -cb build-web/index.html build-web/flashstep.{js,wasm,data} | tail -1 | cut -f1) bytes, ${total} bytes gzip-compressed"

# The desktop app's state at the same link.
xvfb-run -a -s "-screen 0 1600x1000x24" build/app/flashstep gui --preset tiny --step 19 \
  --screenshot "$ci/desktop.png" --dump-state "$ci/desktop.json" >/dev/null

port=$((20000 + RANDOM % 20000))
python3 -m http.server -b 127.0.0.1 -d build-web "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break; sleep 0.1; done

# Chromium as root needs --no-sandbox; the closed network needs the background services off.
chrome() {
  timeout 120 chromium --headless=new --no-sandbox --use-angle=swiftshader --enable-unsafe-swiftshader \
    --disable-background-networking --disable-component-update --disable-sync --no-first-run \
    --disable-extensions --user-data-dir="$(mktemp -d)" --window-size=1600,1000 \
    --virtual-time-budget=30000 "$@" 2>>"$ci/chromium.log"
}
url="http://127.0.0.1:$port/index.html"
chrome --dump-dom "$url?preset=tiny&step=19&dump=1" >"$ci/step19.html"
python3 web/check_page.py step "$ci/step19.html" "$ci/desktop.json"
chrome --dump-dom "$url?preset=nope&step=3" >"$ci/bad.html"
python3 web/check_page.py bad "$ci/bad.html"
chrome --screenshot="$ci/page.png" "$url?preset=tiny&step=19" >/dev/null
python3 web/check_page.py screenshot "$ci/page.png"
if [ -d app/course ]; then
  chrome --dump-dom "$url?course=online-softmax&page=2" >"$ci/course.html"
  python3 web/check_page.py course "$ci/course.html" online-softmax
  chrome --screenshot="$ci/course.png" "$url?course=online-softmax&page=2" >/dev/null
  python3 web/check_page.py screenshot "$ci/course.png"
fi
echo "web-check: passed in $(( $(date +%s) - start )) s"
