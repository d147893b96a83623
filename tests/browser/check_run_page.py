#!/usr/bin/env python3
"""Opens a training run's page in headless Chromium and checks that it works.

The page is the single HTML file that viz::write_run_page writes for a training run
(viz/run_page.h; its data format: docs/run-page.md). This script drives Debian's `chromium` over the DevTools
protocol through a pipe (--remote-debugging-pipe: Chromium reads commands on file
descriptor 3 and writes replies and events on 4, each a JSON text ended by a NUL byte), so
it needs Python 3's standard library and the browser, nothing else: no npm, no download.

It reads what to expect from the page's own inlined JSON (<script id="run-data">) and checks:
  - no JavaScript exception, console error or browser log error, before or after clicking;
  - no network request for anything but the page's own file:// URL or data: URLs;
  - the page draws (DOMContentLoaded to drawn) in under a second;
  - each curve draws one SVG path per series that has points;
  - the samples table has one row per sample;
  - every example, kind, layer and head can be selected, and the matrix then shows
    rows x columns cells and the right token labels;
  - hovering a token in the lines view fades the lines that do not start at it;
  - a head's toggle hides its lines;
  - the overview has a panel per layer and head, and clicking one selects it;
  - the snapshot slider redraws the matrix (its colours differ from first to last step).

Run it on any page that viz::write_run_page wrote (a training run's, say):
    python3 tests/browser/check_run_page.py runs/copy.html
    python3 tests/browser/check_run_page.py runs/copy.html --screenshot /tmp/page.png \
        --full-page --width 1920 --height 1080

Exit status: 0 when every check passes, 1 on the first failure (with a message saying
what), 77 when chromium is not installed (the status CTest reads as "skipped") unless
GRADFORMER_REQUIRE_BROWSER=1 is set, which makes a missing browser a failure too.
"""

import argparse
import base64
import fcntl
import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

SKIPPED = 77
TIMEOUT_SECONDS = 30  # for any one reply from the browser
LOAD_BUDGET_MS = 1000  # DOMContentLoaded to drawn


class CheckFailed(Exception):
    """One of the page's checks failed; the message says which and how."""


def find_chromium(explicit):
    """The browser to run: --chromium, $CHROMIUM, or chromium (Debian) on the PATH."""
    if explicit:  # asked for by name: that one or none
        return shutil.which(explicit)
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


class Browser:
    """Headless Chromium, driven over the DevTools protocol through a pair of pipes."""

    FLAGS = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        # Without these, Chromium calls home at start-up, which this check must not allow
        # (and which fails on a machine without network anyway).
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-extensions", "--mute-audio",
        "--remote-debugging-pipe",
    ]

    def __init__(self, executable):
        self.profile = tempfile.mkdtemp(prefix="gradformer-chromium-")
        self.log = open(os.path.join(self.profile, "chromium.log"), "w+b")
        to_browser_read, to_browser_write = os.pipe()
        from_browser_read, from_browser_write = os.pipe()
        # The child finds the pipes at 3 and 4. Move our ends well above 4 first, so that
        # putting them there cannot overwrite one of them.
        to_browser_read, to_browser_write, from_browser_read, from_browser_write = (
            high_fd(fd) for fd in (to_browser_read, to_browser_write, from_browser_read, from_browser_write))

        def give_child_the_pipes():
            os.dup2(to_browser_read, 3)  # dup2 leaves 3 and 4 open across exec
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [executable, *self.FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            preexec_fn=give_child_the_pipes, close_fds=False)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.writer = os.fdopen(to_browser_write, "wb", buffering=0)
        self.reader = os.fdopen(from_browser_read, "rb", buffering=0)
        self.messages = queue.Queue()
        self.events = []  # every event received, in order
        self.next_id = 0
        self.session = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        while True:
            chunk = self.reader.read(1 << 16)
            if not chunk:
                self.messages.put(None)  # the browser exited
                return
            buffer += chunk
            *complete, buffer = buffer.split(b"\0")
            for message in complete:
                self.messages.put(json.loads(message))

    def send(self, method, params=None, session=True):
        """Sends a command (to the page's session unless session=False); returns its result."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self.writer.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            reply = self._next(deadline, f"the reply to {method}")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CheckFailed(f"{method} failed: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for_event(self, method):
        for event in self.events:
            if event["method"] == method:
                return event
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            message = self._next(deadline, f"the event {method}")
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return message

    def _next(self, deadline, what):
        try:
            message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise CheckFailed(f"waited {TIMEOUT_SECONDS} s for {what} from chromium") from None
        if message is None:
            self.log.seek(0)
            tail = self.log.read().decode(errors="replace")[-2000:]
            raise CheckFailed(f"chromium exited while we waited for {what}; its log ends:\n{tail}")
        return message

    def open_page(self, url, width, height):
        """Opens a tab, attaches to it, starts the event streams we check, then loads url."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                             session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.before_load()
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired")

    def before_load(self):
        """What a subclass asks of the tab once its event streams are on, before the page
        loads (check_playground.py attaches to the page's workers here)."""

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.send("Runtime.evaluate",
                           {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CheckFailed(f"evaluating in the page failed: {text}\n  expression: {expression[:200]}")
        return result["result"].get("value")

    def mouse(self, kind, x, y):
        params = {"type": kind, "x": x, "y": y}
        if kind in ("mousePressed", "mouseReleased"):
            params.update(button="left", clickCount=1)
        self.send("Input.dispatchMouseEvent", params)

    def centre_of(self, selector):
        """Scrolls the element into view; returns the centre of its box, in the viewport."""
        box = self.evaluate(f"""(() => {{
            const element = document.querySelector({json.dumps(selector)});
            if (element === null) return null;
            element.scrollIntoView({{block: "center", inline: "center"}});
            const r = element.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height];
        }})()""")
        if box is None:
            raise CheckFailed(f"nothing matches {selector}")
        if box[2] <= 0 or box[3] <= 0:
            raise CheckFailed(f"{selector} has an empty box ({box[2]} x {box[3]})")
        return box[0], box[1]

    def screenshot(self, path, full_page):
        params = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.send("Page.captureScreenshot", params)["data"]
        pathlib.Path(path).write_bytes(base64.b64decode(data))

    def close(self):
        try:
            self.send("Browser.close", session=False)
            self.process.wait(timeout=10)
        except (CheckFailed, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def high_fd(fd):
    """A copy of fd numbered 10 or above (close-on-exec, like os.pipe's); closes fd."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


# ---- The checks ---------------------------------------------------------------------------


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def report(message):
    print(f"  ok  {message}")


def check_no_errors(browser, page_url):
    """No exception, no console or log error, no request beyond the file itself."""
    problems = []
    for event in browser.events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            problems.append(f"JavaScript exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            problems.append(f"console.{params['type']}: {args}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            problems.append(f"browser log error: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if url != page_url and not url.startswith("data:"):
                problems.append(f"network request for {url}")
    check(not problems, "the page is not clean:\n    " + "\n    ".join(problems))


def check_load_time(browser):
    elapsed = browser.evaluate("""(async () => {
        for (let i = 0; i < 200 && !window.runPageDrawnAt; i++) await new Promise(r => setTimeout(r, 25));
        const navigation = performance.getEntriesByType("navigation")[0];
        return window.runPageDrawnAt ? window.runPageDrawnAt - navigation.domContentLoadedEventStart : null;
    })()""")
    check(elapsed is not None, "the page never finished drawing (window.runPageDrawnAt is unset)")
    check(elapsed < LOAD_BUDGET_MS, f"the page took {elapsed:.0f} ms from DOMContentLoaded to drawn "
          f"(budget {LOAD_BUDGET_MS} ms)")
    report(f"drawn {elapsed:.0f} ms after DOMContentLoaded")
    return elapsed


def check_curves(browser, run):
    drawn = browser.evaluate("""[...document.querySelectorAll("#curves .chart")].map(chart =>
        [...chart.querySelectorAll("svg.curve path.series")].map(p => (p.getAttribute("d") || "").length))""")
    check(len(drawn) == len(run["curves"]), f"{len(drawn)} charts for {len(run['curves'])} curves")
    for curve, paths in zip(run["curves"], drawn):
        drawable = [s for s in curve["series"]
                    if any(x is not None and y is not None and (not curve["log_y"] or y > 0)
                           for x, y in zip(s["x"], s["y"]))]
        if not drawable:
            continue
        check(len(paths) == len(curve["series"]),
              f"curve '{curve['title']}': {len(paths)} paths for {len(curve['series'])} series")
        for series, length in zip(curve["series"], paths):
            if series in drawable:
                check(length > 0, f"curve '{curve['title']}': series '{series['name']}' has an empty path")
    report(f"{len(drawn)} curves, one path per series")
    if not run["curves"]:
        check(browser.evaluate('document.getElementById("curves-section").textContent.includes("No curves")'),
              "no curves, and the section does not say so")


def check_curve_hover(browser, run):
    if not run["curves"]:
        return
    x, y = browser.centre_of("#curves svg.curve")
    browser.mouse("mouseMoved", x, y)
    text = browser.evaluate('(t => t.hidden ? null : t.textContent)(document.getElementById("tooltip"))')
    check(text, "hovering a curve shows no value")
    browser.mouse("mouseMoved", 1, 1)
    report(f"hovering a curve shows {text!r}")


def check_samples(browser, run):
    rows = browser.evaluate('document.querySelectorAll("#samples table.samples tbody tr").length')
    check(rows == len(run["samples"]), f"{rows} sample rows for {len(run['samples'])} samples")
    exact = sum(1 for s in run["samples"] if s["output"] == s["reference"])
    marked = browser.evaluate('document.querySelectorAll("#samples tr.exact").length')
    check(marked == exact, f"{marked} rows marked exact, but {exact} outputs equal their reference")
    report(f"{rows} samples, {exact} marked exact")


KINDS = {  # which tokens label the rows and the columns (viz/run_page.h)
    "encoder": ("source_tokens", "source_tokens"),
    "decoder": ("target_next", "target_read"),
    "cross": ("target_next", "source_tokens"),
}

def with_attention(maps_list):
    """The examples or snapshots the page offers: those with at least one kind of attention."""
    return [maps for maps in maps_list if any(maps[kind] for kind in KINDS)]


SELECT_JS = """(([id, value]) => {
    const select = document.getElementById(id);
    if (![...select.options].some(o => o.value === String(value))) return false;
    select.value = String(value);
    select.dispatchEvent(new Event("change", {bubbles: true}));
    return true;
})"""


def select(browser, element_id, value):
    chosen = browser.evaluate(f"{SELECT_JS}({json.dumps([element_id, value])})")
    check(chosen, f"select#{element_id} has no option {value!r}")


MATRIX_STATE_JS = """(id => ({
    cells: document.querySelectorAll(`#${id} rect.cell`).length,
    rows: [...document.querySelectorAll(`#${id} text.row-label`)].map(t => t.dataset.token),
    columns: [...document.querySelectorAll(`#${id} text.column-label`)].map(t => t.dataset.token),
    fills: [...document.querySelectorAll(`#${id} rect.cell`)].map(c => c.getAttribute("fill")).join(" "),
}))"""


def matrix_state(browser, element_id):
    return browser.evaluate(f"{MATRIX_STATE_JS}({json.dumps(element_id)})")


def check_matrix(browser, element_id, maps, kind, where):
    rows, columns = (maps[KINDS[kind][0]], maps[KINDS[kind][1]])
    shown = matrix_state(browser, element_id)
    check(shown["cells"] == len(rows) * len(columns),
          f"{where}: {shown['cells']} cells, expected {len(rows)} x {len(columns)}")
    check(shown["rows"] == rows, f"{where}: row labels {shown['rows']}, expected {rows}")
    check(shown["columns"] == columns, f"{where}: column labels {shown['columns']}, expected {columns}")


def check_every_selection(browser, run):
    count = 0
    for e, example in enumerate(with_attention(run["attention"])):
        select(browser, "example", e)
        for kind in KINDS:
            if not example[kind]:
                continue
            select(browser, "kind", kind)
            for layer, heads in enumerate(example[kind]):
                select(browser, "layer", layer)
                for head in range(len(heads)):
                    select(browser, "head", head)
                    where = f"example {e} ({example['label']}), {kind} layer {layer} head {head}"
                    check_matrix(browser, "matrix", example, kind, where)
                    count += 1
    report(f"all {count} (example, kind, layer, head) selections show the right matrix and labels")


def check_token_hover(browser):
    """Hovering a query token fades every line that does not start at it."""
    select(browser, "example", 0)
    select(browser, "layer", 0)
    select(browser, "head", 0)
    opacity = """(() => [...document.querySelectorAll("#lines line")].filter(l => l.dataset.from !== "0")
                   .map(l => Number(getComputedStyle(l).opacity)))()"""
    before = browser.evaluate(opacity)
    check(before, "the lines view draws no line that starts elsewhere than at the first query")
    x, y = browser.centre_of('#lines .token[data-side="query"][data-index="0"]')
    browser.mouse("mouseMoved", x, y)
    after = browser.evaluate(opacity)
    own = browser.evaluate("""[...document.querySelectorAll('#lines line[data-from="0"]')]
                               .map(l => Number(getComputedStyle(l).opacity))""")
    check(max(after) < min(before), f"hovering the first query token left other lines at opacity {max(after)}")
    check(all(o == 1 for o in own), "hovering the first query token faded its own lines")
    browser.mouse("mouseMoved", 1, 1)
    restored = browser.evaluate(opacity)
    check(restored == before, "leaving the token did not bring the other lines back")
    report(f"hovering a token fades the other {len(after)} lines to opacity {max(after)}")


def check_head_toggles(browser):
    visible = """(head => [...document.querySelectorAll(`#lines line[data-head="${head}"]`)]
                           .filter(l => l.getClientRects().length > 0).length)"""
    heads = browser.evaluate('document.querySelectorAll("#head-toggles input.head-toggle").length')
    check(heads > 0, "the lines view has no head toggles")
    for head in range(heads):
        shown = browser.evaluate(f"{visible}({head})")
        check(shown > 0, f"head {head} shows no line before its toggle is touched")
        x, y = browser.centre_of(f'#head-toggles input.head-toggle[data-head="{head}"]')
        browser.mouse("mousePressed", x, y)
        browser.mouse("mouseReleased", x, y)
        check(browser.evaluate(f"{visible}({head})") == 0, f"unchecking head {head} left its lines visible")
        browser.mouse("mousePressed", x, y)
        browser.mouse("mouseReleased", x, y)
        check(browser.evaluate(f"{visible}({head})") == shown, f"checking head {head} again did not restore its lines")
    report(f"each of the {heads} head toggles hides and shows its lines")


def check_overview(browser, run):
    example = with_attention(run["attention"])[0]
    select(browser, "example", 0)
    for kind in KINDS:
        if not example[kind]:
            continue
        select(browser, "kind", kind)
        expected = sum(len(heads) for heads in example[kind])
        panels = browser.evaluate('document.querySelectorAll("#overview .panel").length')
        check(panels == expected, f"{kind}: {panels} overview panels for {expected} heads")
        layer, head = len(example[kind]) - 1, len(example[kind][-1]) - 1
        x, y = browser.centre_of(f'#overview .panel[data-layer="{layer}"][data-head="{head}"]')
        browser.mouse("mousePressed", x, y)
        browser.mouse("mouseReleased", x, y)
        chosen = browser.evaluate('[document.getElementById("layer").value, document.getElementById("head").value]')
        check(chosen == [str(layer), str(head)],
              f"{kind}: clicking the panel of layer {layer} head {head} selected {chosen}")
        check_matrix(browser, "matrix", example, kind, f"{kind} after clicking an overview panel")
    report("the overview has a panel per layer and head; clicking one selects it")


def check_snapshots(browser, run):
    snapshots = with_attention(run["snapshots"])
    if not snapshots:
        says = 'document.getElementById("training-attention").textContent.includes("No attention snapshots")'
        check(browser.evaluate(says), "no snapshots, and the section does not say so")
        report("no snapshots, and the page says so")
        return
    kind = next(k for k in KINDS if snapshots[0][k])
    select(browser, "snapshot-kind", kind)
    move = """(value => {
        const slider = document.getElementById("snapshot-slider");
        slider.value = String(value);
        slider.dispatchEvent(new Event("input", {bubbles: true}));
        return document.getElementById("snapshot-step").textContent;
    })"""
    first_label = browser.evaluate(f"{move}(0)")
    first = matrix_state(browser, "snapshot-matrix")
    check_matrix(browser, "snapshot-matrix", snapshots[0], kind, "the first snapshot")
    last_label = browser.evaluate(f"{move}({len(snapshots) - 1})")
    last = matrix_state(browser, "snapshot-matrix")
    check_matrix(browser, "snapshot-matrix", snapshots[-1], kind, "the last snapshot")
    check(first_label == f"step {snapshots[0]['step']}", f"the first snapshot is labelled {first_label!r}")
    check(last_label == f"step {snapshots[-1]['step']}", f"the last snapshot is labelled {last_label!r}")
    if len(snapshots) > 1:
        check(first["fills"] != last["fills"], "the matrix looks the same at the first and the last snapshot")
    report(f"the slider moves through {len(snapshots)} snapshots ({first_label} to {last_label}), "
           "redrawing the matrix")


def check_attention(browser, run):
    if not with_attention(run["attention"]):
        check(browser.evaluate('document.getElementById("attention").textContent.includes("No attention")'),
              "no attention examples, and the section does not say so")
        report("no attention examples, and the page says so")
        return
    check_every_selection(browser, run)
    check_overview(browser, run)
    check_token_hover(browser)
    check_head_toggles(browser)


def run_checks(browser, page, args):
    url = page.as_uri()
    started = time.monotonic()
    browser.open_page(url, args.width, args.height)
    print(f"opened {url} at {args.width} x {args.height} in {time.monotonic() - started:.2f} s")
    try:
        load_ms = check_load_time(browser)
    except CheckFailed:
        check_no_errors(browser, url)  # an exception that stopped the drawing says more
        raise
    check_no_errors(browser, url)
    report("no error and no request while loading")
    run = browser.evaluate('JSON.parse(document.getElementById("run-data").textContent)')
    check(run.get("format") == "gradformer-run-page/1", f"unknown data format {run.get('format')!r}")
    if args.screenshot:
        # Before the checks click around, so that it shows the page as it opens.
        browser.screenshot(args.screenshot, args.full_page)
        report(f"screenshot written to {args.screenshot}")
    check_curves(browser, run)
    check_curve_hover(browser, run)
    check_samples(browser, run)
    check_attention(browser, run)
    check_snapshots(browser, run)
    check_no_errors(browser, url)
    report("no error and no request after all the clicking")
    size = page.stat().st_size
    print(f"PASS {page} ({size / 1024:.0f} KiB, drawn in {load_ms:.0f} ms)")


def check_main(description, page_help, screenshot_help, make_browser, run_checks, add_arguments=None):
    """The command line of a page's check (this one's and check_playground.py's): the page and
    the screenshot's options (and those add_arguments(parser) adds), Chromium found or the check
    skipped (77), the checks run, and the first failure said."""
    parser = argparse.ArgumentParser(
        description=description,
        epilog="Exit status: 0 pass, 1 fail, 77 chromium missing (1 with GRADFORMER_REQUIRE_BROWSER=1).")
    parser.add_argument("page", type=pathlib.Path, help=page_help)
    parser.add_argument("--screenshot", metavar="OUT.png", help=screenshot_help)
    parser.add_argument("--full-page", action="store_true", help="the screenshot shows the whole page, not the window")
    parser.add_argument("--width", type=int, default=1366, help="window width in CSS pixels (default 1366)")
    parser.add_argument("--height", type=int, default=768, help="window height in CSS pixels (default 768)")
    parser.add_argument("--chromium", help="the browser to run (default: $CHROMIUM, or chromium on the PATH)")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()

    page = args.page.resolve()
    if not page.is_file():
        print(f"FAIL {args.page}: no such file", file=sys.stderr)
        return 1
    executable = find_chromium(args.chromium)
    if executable is None:
        required = os.environ.get("GRADFORMER_REQUIRE_BROWSER") == "1"
        print(f"chromium not found: cannot check {args.page}; install it with scripts/install-deps.sh"
              + (" (GRADFORMER_REQUIRE_BROWSER=1, so this fails)" if required else " (skipped)"),
              file=sys.stderr)
        return 1 if required else SKIPPED

    browser = make_browser(executable)
    try:
        run_checks(browser, page, args)
    except CheckFailed as failure:
        print(f"FAIL {args.page}: {failure}", file=sys.stderr)
        return 1
    finally:
        browser.close()
    return 0


def main():
    return check_main("Check a gradformer run page (one self-contained HTML file) in headless Chromium.",
                      "the run's HTML page", "also save a screenshot of the page as it opens",
                      Browser, run_checks)


if __name__ == "__main__":
    sys.exit(main())
