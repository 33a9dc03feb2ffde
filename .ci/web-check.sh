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

# headless.py drives Chromium (SwiftShader's WebGL2) and waits for the app's first frame.
url="http://127.0.0.1:$port/index.html"
page() { python3 web/headless.py "$@"; }
page "$url?preset=tiny&step=19&dump=1" --dom "$ci/step19.html" --screenshot "$ci/page.png"
python3 web/check_page.py step "$ci/step19.html" "$ci/desktop.json"
python3 web/check_page.py screenshot "$ci/page.png"
python3 web/check_page.py first-frame "$ci/step19.html"
page "$url?preset=nope&step=3" --dom "$ci/bad.html"
python3 web/check_page.py bad "$ci/bad.html"
if [ -d app/course ]; then
  page "$url?course=online-softmax&page=2" --dom "$ci/course.html" --screenshot "$ci/course.png"
  python3 web/check_page.py course "$ci/course.html" online-softmax
  python3 web/check_page.py screenshot "$ci/course.png"
fi
# The frame time of the largest preset (the page runs `gui --bench-frames`'s benchmark).
page "$url?preset=gpt2-medium&bench=20" --dom "$ci/bench.html" --timeout 300 \
  --wait "document.getElementById('log').textContent.includes('mean frame time')"
python3 web/check_page.py bench "$ci/bench.html"
echo "web-check: passed in $(( $(date +%s) - start )) s"
