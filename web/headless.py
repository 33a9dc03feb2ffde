#!/usr/bin/env python3
"""Loads a page in headless Chromium and saves what it shows once it is ready.

  headless.py URL [--wait JS] [--act ACTION ...] [--then JS] [--dom FILE] [--screenshot FILE]
              [--console FILE] [--size WxH] [--scale F] [--clip X,Y,W,H] [--profile DIR] [--timeout S]
              [--before JS]

Waits until the JavaScript expression --wait is true (default: the app drew its first frame),
does the --act actions as a user would (key:ArrowRight presses a key, click:X,Y clicks at a
pixel, wheel:X,Y,DY turns the mouse wheel there, expect:JS waits until JS is true or fails,
upload:DIR gives a folder's files to the page's snapshot upload, choose:X,Y,FILE clicks a button
that opens a file dialog and chooses FILE in it, key:Ctrl+v holds Control,
scale:F changes devicePixelRatio,
type:TEXT types, paste:TEXT fires the paste event a browser sends for Ctrl+V), waits until --then
is true, then writes the page's DOM, a PNG of the viewport (or of --clip's rectangle) and the
console's lines. --scale sets devicePixelRatio (a HiDPI screen); --profile keeps the browser's
profile (localStorage, IndexedDB) in a folder between loads; --before runs JavaScript in the page
before its own scripts (a browser that refuses storage). Chromium's own
--dump-dom returns before the WebAssembly has started, so this drives it through the DevTools
protocol over --remote-debugging-pipe (JSON messages, NUL-separated, on file descriptors 3 and
4): standard library only, no WebSocket. WebGL2 comes from SwiftShader (--use-angle=swiftshader).
Exits 1 with a one-line reason if the page is not ready in time.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

FLAGS = ["--headless=new", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
         # the closed network: no background services, no first-run or sync traffic
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-extensions", "--remote-debugging-pipe"]


class Chrome:
    def __init__(self, size, profile=None):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        self.profile = None if profile else tempfile.TemporaryDirectory()
        profile = profile or self.profile.name
        flags = FLAGS + [f"--user-data-dir={profile}", f"--window-size={size.replace('x', ',')}"]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses root otherwise
        # fds 3 and 4 in the child: Chromium reads commands on 3 and answers on 4.
        def fds():  # via fresh numbers first: a pipe end may already be 3 or 4
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)
        self.proc = subprocess.Popen(["chromium"] + flags + ["about:blank"], preexec_fn=fds, pass_fds=(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id, self.buf, self.events, self.session = 0, b"", [], None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            m = self.read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            self.events.append(m)

    def read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def evaluate(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        return r.get("result", {}).get("value")

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# Keys by their DOM name: (code, keyCode), what emscripten's GLFW reads; letters as "a".
KEYS = {"ArrowRight": ("ArrowRight", 39), "ArrowLeft": ("ArrowLeft", 37), "Home": ("Home", 36),
        "End": ("End", 35), " ": ("Space", 32), "Enter": ("Enter", 13), "Control": ("ControlLeft", 17),
        "F2": ("F2", 113)}


def key_event(chrome, kind, name, modifiers=0):
    code, key_code = KEYS[name] if name in KEYS else ("Key" + name.upper(), ord(name.upper()))
    chrome.send("Input.dispatchKeyEvent", {"type": kind, "key": name, "code": code, "modifiers": modifiers,
                                           "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code})


def act(chrome, action):
    kind, _, arg = action.partition(":")
    if kind == "key":  # key:ArrowRight, key:Ctrl+a (Control held around the key)
        ctrl = arg.startswith("Ctrl+")
        name, mods = (arg[5:], 2) if ctrl else (arg, 0)
        if ctrl:
            key_event(chrome, "rawKeyDown", "Control", 2)
            time.sleep(0.1)
        # A short press, as a user's. The app's keys (Right, Left, Space, Home, End, F2) count each
        # press that comes between two frames, however short (app/gui/key_latch.h), and act again
        # only on the browser's key repeats, which these events do not make. ImGui's own keys (a
        # text field's Ctrl+a, Ctrl+c) count only while down at a frame: the hold is for those.
        # The pause after the up lets a frame run before the next action.
        for t, pause in (("rawKeyDown", 0.05), ("keyUp", 0.2)):
            key_event(chrome, t, name, mods)
            time.sleep(pause)
        if ctrl:
            key_event(chrome, "keyUp", "Control")
            time.sleep(0.2)
    elif kind == "type":  # type:TEXT types the characters (a key press each, with its text)
        for ch in arg:
            chrome.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": ch, "text": ch, "unmodifiedText": ch,
                                                   "windowsVirtualKeyCode": ord(ch.upper()) if ch.isalpha() else ord(ch)})
            chrome.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": ch})
            time.sleep(0.1)
        time.sleep(0.2)
    elif kind == "scale":  # scale:F: the screen's devicePixelRatio becomes F (browser zoom, another screen)
        chrome.send("Emulation.setDeviceMetricsOverride", {"width": chrome.width, "height": chrome.height,
                                                           "deviceScaleFactor": float(arg), "mobile": False})
        time.sleep(0.5)
    elif kind == "paste":  # paste:TEXT: the paste event a browser fires for Ctrl+V, carrying TEXT
        chrome.evaluate("(() => { const d = new DataTransfer(); d.setData('text/plain', " + json.dumps(arg) + ");"
                        " document.getElementById('canvas').dispatchEvent(new ClipboardEvent('paste',"
                        " {clipboardData: d, bubbles: true, cancelable: true})); })()")
        time.sleep(0.4)
    elif kind == "click":
        x, y = (float(v) for v in arg.split(","))
        for t in ("mouseMoved", "mousePressed", "mouseReleased"):
            chrome.send("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1})
            time.sleep(0.15)
    elif kind == "wheel":  # wheel:X,Y,DY turns the wheel over a pixel (DY pixels, 100 a notch, > 0 down)
        x, y, dy = (float(v) for v in arg.split(","))
        chrome.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        time.sleep(0.3)  # a frame sees the pointer there first, so the wheel goes to that panel
        chrome.send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy})
        time.sleep(0.3)
    elif kind == "expect":  # expect:JS waits (10 s at most) until JS is true, or the run fails
        if not wait_for(chrome, arg, 10):
            print(f"headless: FAIL: expected {arg}")
            raise SystemExit(1)
        print(f"headless: as expected: {arg}")
    elif kind == "upload":  # the files of a folder into the page's "Upload snapshot folder"
        doc = chrome.send("DOM.getDocument")["root"]["nodeId"]
        node = chrome.send("DOM.querySelector", {"nodeId": doc, "selector": "#snapshots"})["nodeId"]
        # The input takes a folder (webkitdirectory): Chromium lists it, as its folder picker does.
        chrome.send("DOM.setFileInputFiles", {"nodeId": node, "files": [os.path.abspath(arg)]})
        time.sleep(0.5)
    elif kind == "choose":  # choose:X,Y,FILE: a click there must open a file dialog, which gets FILE
        x, y, path = arg.split(",", 2)
        chrome.send("Page.setInterceptFileChooserDialog", {"enabled": True})
        act(chrome, f"click:{x},{y}")
        start, opened = time.time(), None
        while not opened:
            opened = next((e for e in chrome.events if e.get("method") == "Page.fileChooserOpened"), None)
            if time.time() - start > 10:
                print(f"headless: FAIL: the click at {x},{y} opened no file dialog")
                raise SystemExit(1)
            chrome.evaluate("1")  # reads the events that arrived meanwhile
            time.sleep(0.2)
        chrome.events.remove(opened)
        chrome.send("DOM.setFileInputFiles", {"backendNodeId": opened["params"]["backendNodeId"],
                                              "files": [os.path.abspath(path)]})
        time.sleep(0.5)
    else:
        raise SystemExit(f"headless: unknown action {action!r} (key:NAME, type:TEXT, paste:TEXT, scale:F, click:X,Y, "
                         "wheel:X,Y,DY, expect:JS, upload:DIR or choose:X,Y,FILE)")


def wait_for(chrome, expr, timeout):
    start = time.time()
    while not chrome.evaluate(f"Promise.resolve({expr}).then(v => !!v)"):  # a promise: its value
        if time.time() - start > timeout:
            msg = chrome.evaluate("document.getElementById('message') && document.getElementById('message').textContent")
            print(f"headless: the page was not ready after {timeout:.0f} s ({expr}); message: {msg!r}")
            return False
        time.sleep(0.2)
    return True


def wait_download(chrome, timeout):
    start = time.time()
    while time.time() - start < timeout:
        if any(e.get("method") == "Browser.downloadProgress" and e["params"].get("state") == "completed"
               for e in chrome.events):
            return True
        chrome.evaluate("1")  # reads the events that arrived meanwhile
        time.sleep(0.2)
    print(f"headless: no download completed within {timeout:.0f} s")
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--wait", default="document.getElementById('status').dataset.firstFrameMs !== undefined")
    ap.add_argument("--act", action="append", default=[])
    ap.add_argument("--then", default="true")
    ap.add_argument("--downloads", help="a folder for the page's downloads")
    ap.add_argument("--dom")
    ap.add_argument("--screenshot")
    ap.add_argument("--console")
    ap.add_argument("--size", default="1600x1000")
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--scale", type=float, default=1, help="device pixels per CSS pixel (devicePixelRatio)")
    ap.add_argument("--clip", help="X,Y,W,H: the screenshot of this rectangle (CSS pixels) only")
    ap.add_argument("--profile", help="a browser profile folder kept between loads (localStorage)")
    ap.add_argument("--clipboard", action="store_true", help="let the page read and write the clipboard")
    ap.add_argument("--before", help="JavaScript run in the page before its own scripts (e.g. a browser "
                                     "that refuses storage)")
    a = ap.parse_args()
    chrome = Chrome(a.size, a.profile)
    try:
        target = chrome.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        chrome.session = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                     session=False)["sessionId"]
        if a.downloads:
            chrome.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": os.path.abspath(a.downloads),
                                                         "eventsEnabled": True}, session=False)
        if a.clipboard:
            chrome.send("Browser.grantPermissions", {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
                        session=False)
        chrome.send("Runtime.enable")
        chrome.send("Page.enable")
        chrome.send("Log.enable")  # the browser's own lines (a failed load: 404 for favicon.ico)
        w, h = (int(x) for x in a.size.split("x"))
        chrome.width, chrome.height = w, h
        chrome.send("Emulation.setDeviceMetricsOverride", {"width": w, "height": h, "deviceScaleFactor": a.scale,
                                                           "mobile": False})
        if a.before:
            chrome.send("Page.addScriptToEvaluateOnNewDocument", {"source": a.before})
        start = time.time()
        chrome.send("Page.navigate", {"url": a.url})
        ready = wait_for(chrome, a.wait, a.timeout)
        if ready:
            print(f"headless: {a.url} ready after {time.time() - start:.1f} s")
            for action in a.act:
                act(chrome, action)
            ready = wait_for(chrome, a.then, a.timeout)
            if ready and a.downloads:  # the browser writes the file after the page hands it over
                ready = wait_download(chrome, a.timeout)
        if a.dom:
            with open(a.dom, "w", encoding="utf-8") as f:
                f.write(chrome.evaluate("document.documentElement.outerHTML"))
        if a.screenshot:
            shot = {"format": "png"}
            if a.clip:
                x, y, cw, ch = (float(v) for v in a.clip.split(","))
                shot["clip"] = {"x": x, "y": y, "width": cw, "height": ch, "scale": 1}
            png = chrome.send("Page.captureScreenshot", shot)["data"]
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(png))
        if a.console:
            with open(a.console, "w", encoding="utf-8") as f:
                for e in chrome.events:
                    if e.get("method") == "Runtime.consoleAPICalled":
                        args = e["params"]["args"]
                        f.write(" ".join(str(x.get("value", x.get("description", ""))) for x in args) + "\n")
                    elif e.get("method") == "Log.entryAdded":
                        entry = e["params"]["entry"]
                        f.write(f"{entry.get('level')}: {entry.get('text')} {entry.get('url', '')}\n")
                    elif e.get("method") == "Runtime.exceptionThrown":
                        f.write("exception: " + json.dumps(e["params"]["exceptionDetails"])[:20000] + "\n")
        if not ready:
            sys.exit(1)
    finally:
        chrome.close()


if __name__ == "__main__":
    main()
