#!/usr/bin/env bash
# CI stage: the web page (docs/web.md). Builds it with web/build.sh, serves it on loopback and
# loads it in headless Chromium (WebGL2 on SwiftShader):
#   ?preset=tiny&step=19&dump=1  the status line and the state dump against the desktop app's
#                                `gui --preset tiny --step 19 --dump-state` (build/ from setup.sh)
#   ?preset=nope                 a bad link: one visible message line and the default problem,
#                                gone at the user's first step; a long one whole; the link's names
#   the mouse wheel              a notch down and up over a panel scrolls it a little, both ways
#   devicePixelRatio 2           the canvas's pixels, sharp text, clicks, a zoom (HiDPI)
#   copy, cut and paste          in a problem-editor field, through the browser's clipboard
#   two loads, one profile       the course's progress and the display settings are kept (localStorage)
#   opened files across loads    kept in IndexedDB, forgotten on request, a bad kept one refused,
#                                memory only where the browser refuses IndexedDB
#   the Export PNG               the layout's size at devicePixelRatio 1 and 2 (the screen's on request)
#   files from the computer      a bench JSON, .npy files, a saved trace, Q, K, V inputs and a DRAM
#                                measurement through the file dialog; bad ones refused
#   ?course=...                  a course page renders (when the app has the course)
#   file://                      the message says how to serve the folder
#   the console                  no error of the browser's own (a 404: favicon.ico)
#   a screenshot                 not blank (pixel variance); kept in build-web/ci/ to look at
# Prints the page's download size and its time to first frame, and the stage's time.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! command -v chromium >/dev/null; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
web/build.sh
for f in index.html flashstep.js flashstep.wasm flashstep.data; do [ -s "build-web/$f" ] || { echo "web-check: FAIL: no build-web/$f"; exit 1; }; done
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
python3 web/check_page.py self-test
page "$url?preset=tiny&step=19&dump=1" --dom "$ci/step19.html" --screenshot "$ci/page.png" --console "$ci/step19.console"
python3 web/check_page.py console "$ci/step19.console"
python3 web/check_page.py step "$ci/step19.html" "$ci/desktop.json"
python3 web/check_page.py screenshot "$ci/page.png"
python3 web/check_page.py first-frame "$ci/step19.html"
# The keys step the app and the link follows (Right, Right, Left from step 19: step 20).
page "$url?preset=tiny&step=19" --act key:ArrowRight --act key:ArrowRight --act key:ArrowLeft \
  --then "location.search.includes('step=20') && document.getElementById('status').dataset.step === '20'"
echo "web-check: keys: step 19 -> 20, and the link says step=20"
# The editor's fields from a link, and written back into it; the label is the CLI's for the
# same problem (5 steps applied: the CLI's step 4).
want=$(build/app/flashstep run --nq 12 --nk 8 --d 4 --M 64 --schedule fa2 --steps |
  awk '$1 == "4" { l = $2 " " $3; if ($4 ~ /^[ij]=/) l = l " " $4; if ($5 ~ /^j=/) l = l " " $5; print l }')
# An empty expectation would match a page that shows no label at all.
[ -n "$want" ] || { echo "web-check: FAIL: no step 4 label from the CLI to expect"; exit 1; }
page "$url?preset=tiny&schedule=fa2&nq=12&step=5" \
  --wait "document.getElementById('status').dataset.label === '$want' && location.search.includes('nq=12')"
echo "web-check: a link with schedule=fa2&nq=12&step=5 shows '$want' as the CLI does, and keeps nq=12 in the link"
# An export becomes a download (the Export tab, then Trace JSON).
mkdir -p "$ci/downloads"
page "$url?preset=tiny&step=19" --downloads "$ci/downloads" --act click:99,525 --act click:165,613 >/dev/null
python3 -c "import json, sys; t = json.load(open(sys.argv[1])); assert len(t['steps']) == 27, len(t['steps'])" \
  "$ci/downloads/flashstep-trace.json"
echo "web-check: the Export tab's Trace JSON arrived as a download (27 steps)"
# A snapshot folder (the CPU's, from the desktop build) uploaded into the compare view: within
# tolerance of the page's own trace at every j.
build/app/flashstep run --n 8 --d 4 --M 64 --snapshots "$ci/snapshots" >/dev/null
passes="d.snapshots.loaded && d.snapshots.error === '' && d.snapshots.first_over_j === -1 && d.snapshots.final_o_ratio <= 1"
page "$url?preset=tiny&step=10" --act upload:"$ci/snapshots" \
  --then "location.search.includes('view=compare') && (d => $passes)(JSON.parse(UTF8ToString(Module._flashstep_state_json())))"
echo "web-check: an uploaded snapshot folder loads into the compare view and passes"
page "$url?preset=nope&step=3" --dom "$ci/bad.html"
python3 web/check_page.py bad "$ci/bad.html"
# The message goes once the user moves on (it would say "showing the default problem" of
# whatever is on screen), and a long one wraps whole instead of ending in "...".
page "$url?preset=nope&step=3" --act key:ArrowRight --timeout 30 \
  --then "document.getElementById('message').hidden && location.search.includes('step=1')"
echo "web-check: a bad link's message goes at the first step the user takes"
page "$url?foo=1" --size 1280x720 --timeout 30 --then "(e => !e.hidden && e.scrollWidth <= e.clientWidth &&
  e.textContent.endsWith('(showing the default problem)'))(document.getElementById('message'))"
echo "web-check: a long message (unknown parameter, the known names) is shown whole at 1280x720"
# The app's checks name the desktop's flags; the page names the link's parameters.
page "$url?font=9" --dom "$ci/bad-font.html"
python3 web/check_page.py link-error "$ci/bad-font.html" "font must"
page "$url?dtype=fp8&schedule=fa2&backward=1" --dom "$ci/bad-fp8.html"
python3 web/check_page.py link-error "$ci/bad-fp8.html" "backward=1"
# Opened as a file (the browser will not fetch the .wasm from file://), the page says to serve it.
page "file://$PWD/build-web/index.html?preset=tiny" --timeout 30 \
  --wait "document.getElementById('message').textContent.includes('python3 -m http.server')"
echo "web-check: opened from file://, the page says how to serve it"
# The mouse wheel over the Problem panel: a notch down (100 px, as Chromium sends it) scrolls down
# by one of ImGui's steps, a notch up scrolls back (emscripten's GLFW passes pixels, positive
# down, where ImGui takes about 1 a notch, positive up: unscaled, a notch up jumped to the end).
scroll="Module._flashstep_wheel_scroll_y()"
page "$url?preset=tiny&step=19" --act wheel:170,800,100 --act "expect:$scroll > 0 && $scroll < 150" \
  --act wheel:170,800,-100 --act "expect:$scroll === 0"
echo "web-check: the wheel scrolls the Problem panel a notch down and back up"
if [ -d app/course ]; then
  page "$url?course=online-softmax&page=2" --dom "$ci/course.html" --screenshot "$ci/course.png"
  python3 web/check_page.py course "$ci/course.html" online-softmax
  python3 web/check_page.py screenshot "$ci/course.png"
  page "$url?course=online-softmax&page=2" --act key:ArrowRight \
    --then "location.search.includes('page=3') && document.getElementById('status').dataset.course.includes('page 3')"
  echo "web-check: course: Right goes to page 3, and the link says page=3"
fi
# HiDPI (devicePixelRatio 2: a laptop's screen, or the browser zoomed to 200%): the canvas has
# twice its CSS size in pixels each way; the text is sharp and laid out as at 1 (the same part of
# the page at both ratios, check_page.py sharp); a click at a control's CSS position hits it (the
# Export tab's Trace JSON downloads); a ratio that changes while the page is open is followed.
hidpi="(c => c.width === 2 * c.clientWidth && c.height === 2 * c.clientHeight)(document.getElementById('canvas'))"
page "$url?preset=tiny&step=19" --clip 0,60,400,400 --screenshot "$ci/ratio1.png" >/dev/null
page "$url?preset=tiny&step=19" --scale 2 --then "$hidpi" --clip 0,60,400,400 --screenshot "$ci/ratio2.png"
python3 web/check_page.py sharp "$ci/ratio1.png" "$ci/ratio2.png"
mkdir -p "$ci/downloads-ratio2"
page "$url?preset=tiny&step=19" --scale 2 --downloads "$ci/downloads-ratio2" --act click:99,525 --act click:165,613 \
  --screenshot "$ci/page-ratio2.png" >/dev/null
python3 -c "import json, sys; t = json.load(open(sys.argv[1])); assert len(t['steps']) == 27, len(t['steps'])" \
  "$ci/downloads-ratio2/flashstep-trace.json"
page "$url?preset=tiny&step=19" --act scale:2 --act "expect:$hidpi" --clip 0,60,400,400 --screenshot "$ci/zoomed.png" >/dev/null
python3 web/check_page.py sharp "$ci/ratio1.png" "$ci/zoomed.png"
echo "web-check: HiDPI: the canvas at 2x its CSS size, sharp text, clicks where they land, a zoom followed"
# The Export tab's PNG has the layout's size at any devicePixelRatio (1600x975: the window under
# the page's bar), the picture at 2 shrunk by averaging (the same picture as at 1), and at 2 the
# box "PNG at the screen's pixels" gives the frame's 3200x1950.
png_at() {  # png_at FOLDER SCALE [ACTION...]: Export tab, then PNG screenshot, as a download
  local dir="$1" scale="$2"; shift 2
  mkdir -p "$dir"
  page "$url?preset=tiny&step=19" --scale "$scale" --downloads "$dir" --act click:99,525 "$@" --act click:63,613 >/dev/null
}
png_at "$ci/png-ratio1" 1
png_at "$ci/png-ratio2" 2
png_at "$ci/png-ratio2-full" 2 --act click:18,638
python3 web/check_page.py png-size "$ci/png-ratio1/flashstep-trace.png" 1600 975
python3 web/check_page.py same-picture "$ci/png-ratio1/flashstep-trace.png" "$ci/png-ratio2/flashstep-trace.png"
python3 web/check_page.py png-size "$ci/png-ratio2-full/flashstep-trace.png" 3200 1950
echo "web-check: the Export PNG at ratio 2 has the layout's size and picture; the screen's pixels on request"
# Files from the computer (the browser's file dialog, opened by the view's button): a bench JSON
# into the Bench view, O and lse .npy files into the compare view; a broken file leaves what was
# loaded, path included, and the view says why in one line naming the file.
state="JSON.parse(UTF8ToString(Module._flashstep_state_json()))"
cp assets/bench/h200.json "$ci/my-bench.json"
head -c 300 assets/bench/h200.json >"$ci/broken-bench.json"
head -c 100 "$ci/snapshots/final_O.npy" >"$ci/broken-O.npy"
mine="d.bench.loaded && d.bench.path === '/upload/bench/my-bench.json'"
page "$url?preset=tiny&view=bench" --act choose:1120,187,"$ci/my-bench.json" \
  --act "expect:(d => d.view === 'bench' && $mine && d.bench.error === '')($state)" \
  --act choose:1120,187,"$ci/broken-bench.json" \
  --then "(d => $mine && d.bench.error.includes('broken-bench.json') && !d.bench.error.includes('\\n'))($state)" \
  --screenshot "$ci/bench-file.png"
python3 web/check_page.py screenshot "$ci/bench-file.png"
loaded="d.compare.loaded && d.compare.passed && d.compare.o_path === '/upload/compare-o/final_O.npy' &&
  d.compare.lse_path === '/upload/compare-lse/final_lse.npy'"
page "$url?preset=tiny&view=compare" --act choose:558,331,"$ci/snapshots/final_lse.npy" \
  --act choose:453,331,"$ci/snapshots/final_O.npy" --act "expect:(d => d.compare.error === '' && $loaded)($state)" \
  --act choose:453,331,"$ci/broken-O.npy" --then "(d => $loaded && d.compare.error.includes('broken-O.npy'))($state)" \
  --screenshot "$ci/compare-file.png"
python3 web/check_page.py screenshot "$ci/compare-file.png"
echo "web-check: files from the computer load into the Bench and compare views; broken ones change nothing and say so"
# The Problem tab's and the memory panel's files (1600x1400, where the tab shows its last button):
# a trace saved by the Python module (build/python) becomes the run, and a file that is not one
# leaves it; with ".npy inputs" ticked, Q, K and V chosen one at a time fill the fields and the
# third makes the run from them (Nq 12 from Q's rows), then a V with other rows than K and a
# broken Q leave the run, each with one error line naming the file (the buttons move up by the
# preset's two lines once the problem is an edited one); the memory panel's measured DRAM file
# loads, and a broken one leaves it loaded, path included.
PYTHONPATH=build/python PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$ci" <<'EOF_PY'
import sys, numpy as np, flashstep
ci = sys.argv[1]
flashstep.run(nq=12, nk=20, d=8, M=128, schedule="fa2", seed=3).save_trace(f"{ci}/saved-trace.json")
rng = np.random.default_rng(5)
for name, rows in [("q", 12), ("k", 8), ("v", 8), ("v-wrong", 5)]:
    np.save(f"{ci}/{name}.npy", rng.standard_normal((rows, 4)))
EOF_PY
head -c 100 "$ci/q.npy" >"$ci/broken-q.npy"
head -c 200 gpu/results/dram/ncu.json >"$ci/broken-ncu.json"
traced="d.problem.nq === 12 && d.problem.nk === 20 && d.problem.schedule === 'fa2' && d.steps === 78"
page "$url?preset=tiny" --size 1600x1400 --act choose:79,1282,"$ci/saved-trace.json" \
  --act "expect:(d => $traced && d.apply_error === '')($state)" --act choose:79,1317,"$ci/my-bench.json" \
  --then "(d => $traced && d.apply_error.includes('/upload/trace/my-bench.json') && !d.apply_error.includes('\\n'))($state)" \
  --screenshot "$ci/trace-file.png"
python3 web/check_page.py screenshot "$ci/trace-file.png"
made="d.problem.nq === 12 && d.problem.nk === 8 && d.problem.pattern === 'npy' && d.inputs.run_q_path === '/upload/input-q/q.npy' &&
  d.inputs.run_k_path === '/upload/input-k/k.npy' && d.inputs.run_v_path === '/upload/input-v/v.npy'"
page "$url?preset=tiny" --size 1600x1400 --act click:18,1178 --act choose:347,1152,"$ci/q.npy" \
  --act "expect:(d => d.inputs.use_files && d.inputs.q_path === '/upload/input-q/q.npy' && d.inputs.run_q_path === '' && d.problem.nq === 8)($state)" \
  --act choose:347,1178,"$ci/k.npy" --act choose:347,1204,"$ci/v.npy" --act "expect:(d => $made && d.apply_error === '')($state)" \
  --act choose:347,1170,"$ci/v-wrong.npy" --act "expect:(d => $made && d.apply_error.includes('v-wrong.npy'))($state)" \
  --act choose:347,1117,"$ci/broken-q.npy" --screenshot "$ci/npy-files.png" \
  --then "(d => $made && d.inputs.q_path === '/upload/input-q/q.npy' && d.apply_error.includes('broken-q.npy') && !d.apply_error.includes('\\n'))($state)"
python3 web/check_page.py screenshot "$ci/npy-files.png"
# A refused file with the name of one a field already names goes beside it, not over it: after a
# broken q.npy from another folder, Q's field still reads the good bytes, so choosing K again
# remakes the run from all three.
mkdir -p "$ci/same-name" && head -c 100 "$ci/q.npy" >"$ci/same-name/q.npy"
page "$url?preset=tiny" --size 1600x1400 --act click:18,1178 --act choose:347,1152,"$ci/q.npy" \
  --act choose:347,1178,"$ci/k.npy" --act choose:347,1204,"$ci/v.npy" --act "expect:(d => $made && d.apply_error === '')($state)" \
  --act choose:347,1117,"$ci/same-name/q.npy" \
  --act "expect:(d => $made && d.inputs.q_path === '/upload/input-q/q.npy' && d.apply_error.includes('/upload/input-q/2/q.npy'))($state)" \
  --act choose:347,1143,"$ci/k.npy" \
  --then "(d => d.problem.nq === 12 && d.inputs.run_q_path === '/upload/input-q/q.npy' && d.inputs.run_k_path === '/upload/input-k/2/k.npy' && d.apply_error === '')($state)"
points=$(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))['points']))" gpu/results/dram/ncu.json)
measured="d.dram.loaded && d.dram.points === $points && d.dram.path === '/upload/dram/ncu.json'"
page "$url?preset=tiny" --size 1600x1400 --act choose:1543,750,gpu/results/dram/ncu.json \
  --act "expect:(d => $measured && d.dram.error === '')($state)" --act choose:1543,750,"$ci/broken-ncu.json" \
  --then "(d => $measured && d.dram.error.includes('broken-ncu.json') && !d.dram.error.includes('\\n'))($state)"
echo "web-check: a saved trace, Q, K and V .npy files and a DRAM measurement load from the computer; bad ones change nothing and say so, a same-named one included"
# Files from the computer across visits (IndexedDB through emscripten's IDBFS; loads in one
# browser profile): a bench file, O and lse chosen in one load open in their views in the next,
# with no error; the Display menu's "Forget opened files" (F2) empties the
# views and the store, and the next load shows the shipped results and no comparison, with no
# error; a kept file that went bad in the store gets the view's one-line error naming it, the
# shipped results shown. Where the browser refuses IndexedDB, a chosen file is for the visit only
# and the page says so (the Display menu, one console line).
profile="$ci/profile-files"
pause="expect:new Promise(done => setTimeout(() => done(true), 1000))"  # the menu drawn and placed before a click
rm -rf "$profile" && mkdir -p "$profile"
uploads="(u => u.kept && u.stores > u.seen && !u.storing)(flashstepUploads)"
seen="flashstepUploads.seen = flashstepUploads.stores"  # stores counted from here on
shipped="d.bench.loaded && d.bench.path === '/assets/bench/h200.json'"
page "$url?preset=tiny&view=bench" --profile "$profile" --act choose:1120,187,"$ci/my-bench.json" \
  --act "expect:(d => $mine && d.bench.error === '' && d.local_files.includes('1 kept'))($state)" --act click:640,126 \
  --act choose:558,331,"$ci/snapshots/final_lse.npy" --act "expect:($seen, true)" --act choose:453,331,"$ci/snapshots/final_O.npy" \
  --then "(d => $loaded && d.compare.error === '' && d.local_files.includes('3 kept'))($state) && $uploads"
page "$url?preset=tiny&view=bench" --profile "$profile" \
  --act "expect:(d => $mine && d.bench.error === '' && $loaded && d.compare.error === '' && d.view === 'bench')($state)" \
  --act "expect:($seen, true)" --act key:F2 --act "$pause" --act click:746,551 --screenshot "$ci/files-forgotten.png" \
  --then "(d => $shipped && d.bench.error === '' && !d.compare.loaded && d.compare.o_path === '' &&
    d.local_files.includes('forgotten'))($state) && $uploads && FS.readdir('/upload').length === 2"
page "$url?preset=tiny&view=bench" --profile "$profile" \
  --act "expect:(d => $shipped && d.bench.error === '' && !d.compare.loaded && d.compare.error === '')($state)" \
  --act "expect:FS.readdir('/upload').length === 2" --act choose:1120,187,"$ci/my-bench.json" --act "expect:(d => $mine)($state)" \
  --act "expect:($seen, FS.writeFile('/upload/bench/my-bench.json', '{\"runs\": ['), flashstepStoreUploads(), true)" \
  --then "$uploads"
page "$url?preset=tiny&view=bench" --profile "$profile" --screenshot "$ci/files-bad.png" \
  --then "(d => $shipped && d.bench.error.includes('/upload/bench/my-bench.json') && !d.bench.error.includes('\\n'))($state)"
python3 web/check_page.py screenshot "$ci/files-bad.png"
refuse="IDBFactory.prototype.open = function () { throw new DOMException('The user denied permission', 'SecurityError'); };"
page "$url?preset=tiny&view=bench" --before "$refuse" --console "$ci/files-refused.console" \
  --act choose:1120,187,"$ci/my-bench.json" --act key:F2 --screenshot "$ci/files-refused.png" \
  --then "(d => $mine && d.bench.error === '' && d.local_files.includes('for this visit only'))($state) && !flashstepUploads.kept"
python3 web/check_page.py said-once "$ci/files-refused.console" "kept for this visit only"
echo "web-check: opened files are kept across loads (bench, O and lse), forgotten on request, a bad kept one refused; memory only where IndexedDB is refused"
# Copy and paste in a text field (the problem editor's Nq, 8 in tiny; 1600x1400 shows Apply):
# Ctrl+A then Ctrl+C writes the clipboard (navigator.clipboard), a copy event and a cut event
# take the field's text (a copy event then finds the cut field empty), and the paste event's
# text goes into the field, which Apply puts into the run and the link.
event="(kind => { const d = new DataTransfer(); document.getElementById('canvas').dispatchEvent(new ClipboardEvent(kind,
  {clipboardData: d, bubbles: true, cancelable: true})); return d.getData('text/plain'); })"
page "$url?preset=tiny&step=19" --size 1600x1400 --clipboard --act click:30,815 --act key:Ctrl+a --act key:Ctrl+c \
  --act "expect:navigator.clipboard.readText().then(t => t === '8', e => false)" \
  --act "expect:$event('copy') === '8'" --act "expect:$event('cut') === '8'" --act "expect:$event('copy') === ''" \
  --act paste:12 --act "expect:$event('copy') === '12'" --act click:60,1251 --then "location.search.includes('nq=12')"
echo "web-check: copy, cut and paste in the problem editor: Nq 8 copied and cut, 12 pasted and applied"
# The course's progress across visits (localStorage; loads in one browser profile): pages seen in
# one load are there in the next (a Right there saves pages_seen 3, not 2), and with the first
# chapter finished (its pages seen and its questions answered right: the ids `learn --answers`
# prints) an empty course= opens the second chapter.
if [ -d app/course ]; then
  profile="$ci/profile"
  rm -rf "$profile" && mkdir -p "$profile"
  stored="JSON.parse(localStorage.getItem('flashstep-course-progress') || '{}')"
  at="document.getElementById('status').dataset.course.startsWith"
  page "$url?course=" --profile "$profile" --act key:ArrowRight --act key:ArrowRight \
    --then "$at('memory-bound, page 3') && $stored['memory-bound'].pages_seen === 3"
  ids=$(build/app/flashstep learn memory-bound --answers | python3 -c "import json, sys; print(json.dumps([l.split()[0] for l in sys.stdin]))")
  [ "$ids" != "[]" ] || { echo "web-check: FAIL: learn --answers listed no questions"; exit 1; }
  page "$url?course=" --profile "$profile" --act key:ArrowRight --act "expect:$at('memory-bound, page 2')" \
    --act "expect:$stored['memory-bound'].pages_seen === 3" \
    --then "(s => { const m = s['memory-bound']; m.pages_seen = m.pages; m.right = $ids;
      localStorage.setItem('flashstep-course-progress', JSON.stringify(s)); return true; })($stored)"
  page "$url?course=" --profile "$profile" --then "$at('safe-softmax, page 1') && location.search.includes('course=safe-softmax')"
  echo "web-check: the course's progress is kept across loads, and course= opens the first chapter not finished"
fi
# The Display menu's settings across visits (localStorage, one profile): the light theme chosen in
# the menu (F2, then "light") is stored, the next plain load opens light (and the link says so),
# and a link's theme=dark wins for its visit without replacing what is stored.
profile="$ci/profile-display"
rm -rf "$profile" && mkdir -p "$profile"
display="JSON.parse(localStorage.getItem('flashstep-display') || '{}')"
# (The menu is centred: its "light" is at y 250 with the page's note on opened files below.)
page "$url?preset=tiny" --profile "$profile" --act key:F2 --act "$pause" --act click:800,250 \
  --then "$display.theme === 'light' && location.search.includes('theme=light')"
page "$url?preset=tiny" --profile "$profile" --screenshot "$ci/display-kept.png" \
  --then "(d => d.display.theme === 'light')($state) && location.search.includes('theme=light')"
page "$url?preset=tiny&theme=dark" --profile "$profile" \
  --then "(d => d.display.theme === 'dark')($state) && $display.theme === 'light'"
echo "web-check: the Display menu's theme is kept across loads, and a link's theme= wins for its visit"
# Under virtual time (--virtual-time-budget), consecutive frames can share a timestamp: the page
# must keep drawing (ImGui refuses a zero frame time), at a step and on a course page.
virtual() {
  timeout 120 chromium --headless=new --no-sandbox --use-angle=swiftshader --enable-unsafe-swiftshader \
    --virtual-time-budget=20000 --window-size=1600,1000 "$@" 2>/dev/null
}
virtual --dump-dom "$url?preset=tiny&step=19" >"$ci/virtual.html"
python3 web/check_page.py virtual "$ci/virtual.html" step=19
virtual --screenshot="$ci/virtual.png" "$url?preset=tiny&step=19"
python3 web/check_page.py screenshot "$ci/virtual.png"
if [ -d app/course ]; then
  virtual --dump-dom "$url?course=memory-bound&page=3" >"$ci/virtual-course.html"
  python3 web/check_page.py virtual "$ci/virtual-course.html" memory-bound
  virtual --screenshot="$ci/virtual-course.png" "$url?course=memory-bound&page=3"
  python3 web/check_page.py screenshot "$ci/virtual-course.png"
fi
echo "web-check: under virtual time the page draws at step 19 and on a course page"
# The frame time of the largest preset (the page runs `gui --bench-frames`'s benchmark).
page "$url?preset=gpt2-medium&bench=20" --dom "$ci/bench.html" --timeout 300 \
  --wait "document.getElementById('log').textContent.includes('mean frame time')"
python3 web/check_page.py bench "$ci/bench.html"
echo "web-check: passed in $(( $(date +%s) - start )) s"
