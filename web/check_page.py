#!/usr/bin/env python3
"""Checks of the web page as headless Chromium rendered it (.ci/web-check.sh runs them).

  check_page.py step DOM.html DESKTOP.json   the page's #status and state dump against the
                                             desktop app's --dump-state at the same link
  check_page.py bad DOM.html                 a bad link: one visible message line, default problem
  check_page.py link-error DOM.html WORDS     a bad link's message says WORDS (the link's
                                             parameter, as "font must"), names no --flag, and
                                             holds its whole text as its tooltip
  check_page.py course DOM.html CHAPTER      a course page rendered (its status names it)
  check_page.py console CONSOLE.txt          the browser logged no error of its own (a failed
                                             load, such as a 404 for favicon.ico)
  check_page.py said-once CONSOLE.txt WORDS  the page's console has exactly one line with WORDS
  check_page.py screenshot PAGE.png          the screenshot is not blank (pixel variance)
  check_page.py sharp ONE.png TWO.png        the same part of the page at devicePixelRatio 1
                                             and 2: the same layout, and sharp text at 2
  check_page.py png-size PNG W H             an exported PNG has W x H pixels
  check_page.py same-picture ONE.png TWO.png two pictures of the same size show the same
                                             (mean luminance difference at most 12 of 255)
  check_page.py bench DOM.html               prints the page's frame benchmark lines
  check_page.py first-frame DOM.html         prints the time to the first frame
  check_page.py virtual DOM.html             a page loaded under virtual time: no error message,
                                             a first frame drawn (data-step set)
  check_page.py self-test                    the matrix comparison refuses truncated data
Each prints what it checked and exits 1 on a failure. Standard library only (fresh CI machine).
"""
import html.parser
import json
import math
import struct
import sys
import zlib


class Dom(html.parser.HTMLParser):
    """The text of the elements with an id, and their data-* attributes."""

    def __init__(self, text):
        super().__init__()
        self.text, self.attrs, self.hidden, self._open = {}, {}, {}, []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.text[a["id"]] = ""
            self.attrs[a["id"]] = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
            self.hidden[a["id"]] = "hidden" in a
        self._open.append(a.get("id"))

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()

    def handle_data(self, data):
        for i in self._open:
            if i:
                self.text[i] += data


def fail(msg):
    print("web-check: FAIL: " + msg)
    sys.exit(1)


def read_dom(path):
    with open(path, encoding="utf-8") as f:
        return Dom(f.read())


def close(a, b):
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def same_matrix(a, b):
    """Two matrices (lists of rows) or both None: the same shape first, then every value close.
    zip() alone would stop at the shorter one, so that truncated data would pass."""
    if a is None or b is None:
        return a is None and b is None
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b) or not a:
        return False
    for ra, rb in zip(a, b):
        if not isinstance(ra, list) or not isinstance(rb, list) or len(ra) != len(rb) or not ra:
            return False
    return all(close(x, y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def check_step(dom_path, desktop_path):
    dom = read_dom(dom_path)
    with open(desktop_path, encoding="utf-8") as f:
        desk = json.load(f)
    status = dom.text.get("status", "").strip()
    label = dom.attrs.get("status", {}).get("label")
    step = int(dom.attrs.get("status", {}).get("step", -1))
    print(f"web-check: page status '{status}'; desktop: {desk['line']} i={desk['i']} j={desk['j']} step {desk['index']}")
    want = desk["line"] + (f" i={desk['i']}" if desk["i"] >= 0 else "") + (f" j={desk['j']}" if desk["j"] >= 0 else "")
    if label != want or step != desk["index"]:
        fail(f"status label '{label}' step {step}, desktop '{want}' step {desk['index']}")
    if dom.text.get("message", "").strip():
        fail("a message is shown for a good link: " + dom.text["message"].strip())
    dump_text = dom.text.get("state-dump", "").strip()
    if not dump_text:
        fail("the page printed no state dump (dump=1)")
    page = json.loads(dump_text)
    for key in ("index", "steps", "line", "i", "j", "hbm_read_total", "hbm_write_total"):
        if page[key] != desk[key]:
            fail(f"{key}: page {page[key]}, desktop {desk[key]}")
    for t in ("m", "l", "O"):
        a, b = page["hbm"][t], desk["hbm"][t]
        if not same_matrix(a, b):
            fail(f"HBM {t}: page {a}, desktop {b}")
    print(f"web-check: step {page['index']} of {page['steps']}: label, HBM totals and m, l, O match the desktop "
          f"(m = {[round(r[0], 4) for r in page['hbm']['m']]}, l = {[round(r[0], 4) for r in page['hbm']['l']]})")


def check_bad(dom_path):
    dom = read_dom(dom_path)
    msg = dom.text.get("message", "").strip()
    status = dom.text.get("status", "").strip()
    print(f"web-check: bad link: message '{msg}', status '{status}'")
    if not msg or "\n" in msg or dom.hidden.get("message", True):
        fail("a bad link shows no one-line message")
    if dom.attrs.get("status", {}).get("step") != "0":
        fail("a bad link does not open the default problem at step 0")


def check_link_error(dom_path, words):
    """The app's checks phrase errors for the desktop's flags (--font-scale, --page 99); the page
    must name the link's parameter (font, page=99) instead."""
    check_bad(dom_path)
    dom = read_dom(dom_path)
    msg = dom.text.get("message", "").strip()
    if words not in msg:
        fail(f"the message does not say '{words}'")
    flags = [w for w in msg.split() if w.startswith("--")]
    if flags:
        fail(f"the message names flags a link does not have: {flags}")
    if dom.attrs.get("message") is None or HTMLTitle.of(dom_path, "message") != msg:
        fail("the message line has no tooltip with its whole text")
    print(f"web-check: the message names the link's parameter ('{words}') and no flag")


class HTMLTitle(html.parser.HTMLParser):
    """The title attribute of the element with an id."""

    @staticmethod
    def of(path, ident):
        p = HTMLTitle()
        p.want, p.title = ident, None
        with open(path, encoding="utf-8") as f:
            p.feed(f.read())
        return p.title

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == self.want:
            self.title = (a.get("title") or "").strip()


def check_course(dom_path, chapter):
    dom = read_dom(dom_path)
    status = dom.text.get("status", "").strip()
    print(f"web-check: course page: status '{status}'")
    if dom.text.get("message", "").strip():
        fail("the course link shows a message: " + dom.text["message"].strip())
    if chapter not in dom.attrs.get("status", {}).get("course", ""):
        fail(f"the status does not name the course chapter {chapter}")


def check_said_once(path, words):
    """The page's console (headless.py --console) has exactly one line with WORDS: a browser that
    refuses storage is told of once, not at every upload or frame."""
    with open(path, encoding="utf-8") as f:
        lines = [l.strip() for l in f if words in l]
    print(f"web-check: the console says '{words}' {len(lines)} time(s)" + (f": {lines[0]}" if lines else ""))
    if len(lines) != 1:
        fail(f"the console should say '{words}' once, not {len(lines)} times")


def check_console(path):
    """headless.py --console writes the browser's own entries (the Log domain) as 'LEVEL: text'."""
    with open(path, encoding="utf-8") as f:
        errors = [l.strip() for l in f if l.startswith("error: ")]
    if errors:
        fail("the browser logged errors: " + "; ".join(errors))
    print("web-check: the browser logged no error (no failed load)")


def png_pixels(path):
    """RGB(A) rows of an 8-bit PNG (what Chromium writes), unfiltered."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or colour not in (2, 6):
        fail(f"{path}: unexpected PNG format (depth {depth}, colour type {colour})")
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def check_screenshot(path):
    w, h, bpp, rows = png_pixels(path)
    lum = [0.299 * r[x] + 0.587 * r[x + 1] + 0.114 * r[x + 2] for r in rows[::4] for x in range(0, w * bpp, 4 * bpp)]
    mean = sum(lum) / len(lum)
    sd = math.sqrt(sum((v - mean) ** 2 for v in lum) / len(lum))
    colours = len({(r[x], r[x + 1], r[x + 2]) for r in rows[::4] for x in range(0, w * bpp, 4 * bpp)})
    print(f"web-check: screenshot {w}x{h}: luminance mean {mean:.1f}, standard deviation {sd:.1f}, {colours} colours")
    if sd < 10 or colours < 50:
        fail("the screenshot is (nearly) blank")


def luminance(path):
    w, h, bpp, rows = png_pixels(path)
    return w, h, [[0.299 * r[x] + 0.587 * r[x + 1] + 0.114 * r[x + 2] for x in range(0, w * bpp, bpp)] for r in rows]


def steep_edges(lum):
    """Neighbours (across a row) whose luminance differs by more than 96 of 255: the edges of a
    glyph's stems where it is drawn 1:1; a frame the browser scaled up 2x splits each into two
    smaller steps."""
    return sum(1 for row in lum for a, b in zip(row, row[1:]) if abs(a - b) > 96)


def check_sharp(one_path, two_path):
    """The same part of the page at devicePixelRatio 1 and 2 (headless.py --scale 2 --clip): at 2
    the picture has twice the pixels each way, the layout is the same (the 2x one averaged over
    2x2 pixels is close to the 1x one: nothing moved, nothing cut off), and the text is sharp (as
    many steep edges per row as at 1x, where a frame the browser scaled up has few)."""
    w1, h1, one = luminance(one_path)
    w2, h2, two = luminance(two_path)
    if (w2, h2) != (2 * w1, 2 * h1):
        fail(f"the screenshot at ratio 2 is {w2}x{h2}, not twice {w1}x{h1}")
    diff = sum(abs((two[2 * y][2 * x] + two[2 * y][2 * x + 1] + two[2 * y + 1][2 * x] + two[2 * y + 1][2 * x + 1]) / 4
                   - one[y][x]) for y in range(h1) for x in range(w1)) / (w1 * h1)
    e1, e2 = steep_edges(one), steep_edges(two)
    sharp = e2 / (2 * e1) if e1 else 0.0  # 2x the rows, about as many edges in each
    print(f"web-check: ratio 2 against 1 ({w1}x{h1} CSS pixels): mean luminance difference {diff:.1f} after 2x2 "
          f"averaging, steep edges {e2} against {e1} (a share of {sharp:.2f} of 1x's per row)")
    if e1 < 50:
        fail("the screenshot at ratio 1 has almost no text to compare")
    if diff > 12:
        fail(f"the page at ratio 2 is laid out differently (mean difference {diff:.1f} > 12)")
    if sharp < 0.5:
        fail(f"the text at ratio 2 is soft (steep edges {sharp:.2f} of 1x's per row, want at least 0.5)")


def check_png_size(path, w, h):
    got_w, got_h, _, _ = png_pixels(path)
    print(f"web-check: {path.split('/')[-1]} is {got_w}x{got_h} pixels (want {w}x{h})")
    if (got_w, got_h) != (int(w), int(h)):
        fail(f"{path} is {got_w}x{got_h}, not {w}x{h}")


def check_same_picture(one_path, two_path):
    """The Export PNG at devicePixelRatio 2, shrunk to the layout's size, against the one at 1:
    the same layout (nothing moved or cut off) with text as fine as the averaging leaves it."""
    w1, h1, one = luminance(one_path)
    w2, h2, two = luminance(two_path)
    if (w1, h1) != (w2, h2):
        fail(f"{two_path} is {w2}x{h2}, {one_path} {w1}x{h1}")
    diff = sum(abs(a - b) for ra, rb in zip(one, two) for a, b in zip(ra, rb)) / (w1 * h1)
    print(f"web-check: {two_path.split('/')[-1]} against {one_path.split('/')[-1]} ({w1}x{h1}): "
          f"mean luminance difference {diff:.1f}")
    if diff > 12:
        fail(f"the two pictures differ (mean luminance difference {diff:.1f} > 12)")


def print_first_frame(dom_path):
    first = read_dom(dom_path).attrs.get("status", {}).get("first-frame-ms")
    print(f"web-check: first frame drawn {first} ms after navigation start")


def print_bench(dom_path):
    dom = read_dom(dom_path)
    lines = [l for l in dom.text.get("log", "").splitlines() if l.startswith(("bench:", "mean frame"))]
    if not lines:
        fail("the page printed no frame benchmark")
    for l in lines:
        print("web-check: " + l)


def check_virtual(dom_path, *expect):
    """A page loaded with --virtual-time-budget (frames that may share a timestamp): it must show
    no message (the app did not stop) and have drawn frames: its status says the step, or the
    course chapter given in `expect`."""
    dom = read_dom(dom_path)
    msg = dom.text.get("message", "").strip()
    attrs = dom.attrs.get("status", {})
    print(f"web-check: virtual time: status '{dom.text.get('status', '').strip()}', message '{msg}'")
    if msg:
        fail("the page under virtual time shows: " + msg)
    if "first-frame-ms" not in attrs:
        fail("the page under virtual time drew no frame")
    for want in expect:
        if want.startswith("step="):
            if attrs.get("step") != want[5:]:
                fail(f"the page under virtual time is at step {attrs.get('step')}, not {want[5:]}")
        elif want not in attrs.get("course", ""):
            fail(f"the page under virtual time does not show course {want}")


def self_test():
    """same_matrix must refuse what zip() would let through: a truncated matrix, an empty one."""
    full = [[1.0], [2.0], [3.0]]
    assert same_matrix(full, [[1.0], [2.0], [3.0]])
    assert not same_matrix(full, [[1.0]]), "1 of 3 rows"
    assert not same_matrix(full, []), "an empty matrix"
    assert not same_matrix([[1.0, 2.0]], [[1.0]]), "a short row"
    assert not same_matrix(full, None) and same_matrix(None, None)
    assert not same_matrix(full, [[1.0], [2.0], [3.1]])
    print("web-check: check_page.py's matrix comparison refuses truncated and empty data")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"step": check_step, "bad": check_bad, "link-error": check_link_error, "console": check_console, "said-once": check_said_once, "course": check_course, "screenshot": check_screenshot,
     "sharp": check_sharp, "png-size": check_png_size, "same-picture": check_same_picture, "bench": print_bench, "first-frame": print_first_frame, "virtual": check_virtual,
     "self-test": self_test}[cmd](*args)
