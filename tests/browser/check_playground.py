#!/usr/bin/env python3
"""Opens the playground (web/page/, built into playground.html) in headless Chromium and checks
that it trains.

The browser is driven as tests/browser/check_run_page.py drives it (its Browser class: the
DevTools protocol over a pipe, Python's standard library only), and is also told to attach to
the page's Web Worker, so that the worker's errors and requests are seen too. The page is opened
from its file with the fragment #task=copy&autostart, and the checks are:
  - the engine loads and the run starts by itself;
  - a click on Pause while training runs is handled within 100 ms (from the event's time stamp
    to the end of the page's handler), and the steps then stop; One step takes exactly one;
    Resume goes on;
  - the copy task reaches 95% exact (gf_score) within 120 s of training;
  - the loss curve has its paths and the attention map its cells and token labels, for each
    kind of attention;
  - a typed source decodes (greedy and beam 4) with its attention, and a malformed one gets the
    engine's message;
  - with --transformer (the native command): the checkpoint the page saves decodes with
    `transformer decode` to the page's own output, and checkpoints trained natively (the copy
    task, and the toy language with its tokenizer) opened in the page through its file input
    decode there as `transformer decode` and `translate` decode them; a file that is not a
    checkpoint is refused with a message naming it, and the model stays as it was;
  - an engine error (a start with 3 heads for d-model 64) shows in the page's message box;
  - the run's page (gf_page) is the native run page's: its data has the loss (each step's and
    its average), rate and score curves, samples, attention and snapshots, it shows in the
    playground's frame, and tests/browser/check_run_page.py passes it;
  - pasted pairs (task translate) train, and a malformed pair is refused naming its line;
  - the language model (task lm): its knobs show the engine's defaults (the settings of the run
    it starts) and only the knobs that apply; text too short for a window, a NUL character and a
    file that is not UTF-8 are refused with a clear message, and a text file opened through the
    text box's file input is what it shows; the built-in text trains to the end, its perplexity
    falls and ends below the bigram model's; a sample is drawn at step 0 and at each score, and
    it changes as the model learns, from noise to words of the text; the Sample button with a
    fixed seed gives the same text twice (another seed, another text), and its attention is
    decoder self-attention only; Decode is refused; with --transformer, `transformer sample`
    gives the page's sample from the page's checkpoint, and a language model trained natively
    opens in the page and samples there what `transformer sample` does;
  - every preset a lesson links to (lessons/*/README*.md: playground.html#...) starts a run with
    each of its settings, and the engine accepts them;
  - no JavaScript exception or console error, in the page or the worker, and no request but
    for file:, data: and blob: URLs.

    python3 tests/browser/check_playground.py build-wasm/playground.html --screenshot /tmp/playground.png

Exit status: 0 when every check passes, 1 on the first failure, 77 when chromium is not
installed (CTest's "skipped") unless GRADFORMER_REQUIRE_BROWSER=1 is set.
"""

import base64
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_run_page import (  # noqa: E402
    TIMEOUT_SECONDS, Browser, check, check_main, report)

TARGET_EXACT = 0.95
TRAINING_BUDGET_S = 120  # from the run's start to TARGET_EXACT, the time held paused not counted
CLICK_BUDGET_MS = 100
ENGINE_BUDGET_S = 60  # page opened to the run started: the engine's 1.6 MB to parse and compile
ALLOWED_SCHEMES = ("file:", "data:", "blob:")
LESSONS = pathlib.Path(__file__).resolve().parents[2] / "lessons"


class WorkerBrowser(Browser):
    """The Browser of check_run_page.py, also attached to the workers the page starts."""

    def before_load(self):
        # Auto-attach before the page loads: each worker then waits (waitForDebuggerOnStart)
        # until its own event streams are on, so none of its events is missed.
        self.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True})

    def send_to(self, session, method, params=None):
        page_session, self.session = self.session, session
        try:
            return self.send(method, params)
        finally:
            self.session = page_session

    def wait_for_worker(self):
        """The session of the page's worker, once attached (our own tab's attachment is an
        event of the same name)."""
        def worker_session(event):
            params = event.get("params", {})
            if event.get("method") == "Target.attachedToTarget" and params["targetInfo"]["type"] == "worker":
                return params["sessionId"]
            return None

        for event in self.events:
            if worker_session(event):
                return worker_session(event)
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            message = self._next(deadline, "the page's worker")
            if "method" in message:
                self.events.append(message)
                if worker_session(message):
                    return worker_session(message)

    def start_worker(self):
        """Turns on the worker's event streams, then lets it run. Returns its session."""
        session = self.wait_for_worker()
        for domain in ("Runtime", "Log", "Network"):
            self.send_to(session, f"{domain}.enable")
        self.send_to(session, "Runtime.runIfWaitingForDebugger")
        return session


def status(browser):
    return browser.evaluate("window.gradformer.status()")


def wait_for(browser, what, condition, timeout):
    """Polls the page's status until condition(status) holds; returns that status."""
    deadline = time.monotonic() + timeout
    while True:
        s = status(browser)
        check(s["error"] is None, f"waiting for {what}, the page shows an error: {s['error']}")
        if condition(s):
            return s
        check(time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}; the status is {s}")
        time.sleep(0.2)


def click(browser, element_id):
    """A real click (mouse events through the browser) on a button. Returns the milliseconds
    from the event's time stamp to the end of the page's own handler, and the button's label
    and the page's state after it."""
    browser.evaluate(f"""(() => {{
        const button = document.getElementById({json.dumps(element_id)});
        window.checkClick = null;
        // On window, in the bubbling phase: after the button's own listener.
        window.addEventListener("click", (e) => {{
            if (e.target === button)
                window.checkClick = {{ms: performance.now() - e.timeStamp, label: button.textContent,
                                      state: window.gradformer.status().state}};
        }}, {{once: true}});
    }})()""")
    x, y = browser.centre_of(f"#{element_id}")
    browser.mouse("mousePressed", x, y)
    browser.mouse("mouseReleased", x, y)
    handled = browser.evaluate("window.checkClick")
    check(handled is not None, f"the click on #{element_id} did not reach the page")
    return handled


def check_buttons(browser):
    """Pause, One step and Resume while the copy task trains. Returns the seconds held paused."""
    wait_for(browser, "10 steps", lambda s: s["state"] == "running" and s["step"] >= 10, 60)
    paused_at = time.monotonic()
    handled = click(browser, "pause")
    check(handled["state"] == "paused" and handled["label"] == "Resume",
          f"after Pause the state is {handled['state']!r} and the button says {handled['label']!r}")
    check(handled["ms"] < CLICK_BUDGET_MS,
          f"the click on Pause took {handled['ms']:.1f} ms to handle while training ran "
          f"(budget {CLICK_BUDGET_MS} ms)")
    report(f"a click on Pause was handled {handled['ms']:.1f} ms after the event, while training ran")
    time.sleep(0.6)  # the slice that was under way ends
    first = status(browser)["step"]
    time.sleep(1.0)
    second = status(browser)["step"]
    check(first == second, f"paused, the run still moved from step {first} to {second}")
    report(f"paused at step {first}: no step in the next second")

    click(browser, "step")
    stepped = wait_for(browser, "one step", lambda s: s["step"] != first, 10)
    time.sleep(0.5)
    after = status(browser)
    check(stepped["step"] == first + 1 and after["step"] == first + 1 and after["state"] == "paused",
          f"One step went from step {first} to {after['step']} ({after['state']})")
    report(f"One step took one step, to {first + 1}, and stayed paused")

    handled = click(browser, "pause")
    check(handled["state"] == "running" and handled["label"] == "Pause",
          f"after Resume the state is {handled['state']!r} and the button says {handled['label']!r}")
    wait_for(browser, "training to go on", lambda s: s["step"] > first + 1, 10)
    report(f"Resume goes on (handled in {handled['ms']:.1f} ms)")
    return time.monotonic() - paused_at


def check_training(browser, started, paused_s):
    reached = wait_for(browser, f"{TARGET_EXACT:.0%} exact",
                       lambda s: s["exact"] is not None and s["exact"] >= TARGET_EXACT
                       or s["state"] == "finished",
                       TRAINING_BUDGET_S + paused_s)
    elapsed = time.monotonic() - started - paused_s
    check(reached["exact"] is not None and reached["exact"] >= TARGET_EXACT,
          f"the run finished at {reached['step']} steps with {reached['exact']} exact, "
          f"under {TARGET_EXACT}")
    check(elapsed <= TRAINING_BUDGET_S, f"{TARGET_EXACT:.0%} exact took {elapsed:.0f} s of training "
          f"(budget {TRAINING_BUDGET_S} s)")
    check(reached["bleu"] is None, f"the copy task reports a BLEU of {reached['bleu']}")
    report(f"{reached['exact']:.0%} exact at step {reached['scored_at']}, {elapsed:.1f} s after the start "
           f"({paused_s:.1f} s held paused not counted; {reached['steps_per_s']:.1f} steps/s)")
    return elapsed


def check_drawing(browser):
    # The page draws once a frame; a frame after the last message is enough.
    browser.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    paths = browser.evaluate("""[...document.querySelectorAll("#loss-chart path.series")]
        .map((p) => [p.getAttribute("class"), (p.getAttribute("d") || "").length])""")
    kinds = {name.split()[1]: length for name, length in paths}
    check(all(kinds.get(k, 0) > 0 for k in ("raw", "smooth", "score")),
          f"the loss chart's paths (class, length of d): {paths}")
    report("the loss chart draws the raw loss, its moving average and the score")

    for kind, (rows_key, columns_key) in {"encoder": ("source_tokens", "source_tokens"),
                                          "decoder": ("target_next", "target_read"),
                                          "cross": ("target_next", "source_tokens")}.items():
        shown = browser.evaluate(f"""(async () => {{
            const kind = document.getElementById("kind");
            kind.value = {json.dumps(kind)};
            kind.dispatchEvent(new Event("change", {{bubbles: true}}));
            await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            const maps = window.gradformer.attention().maps;
            return {{
                rows: maps[{json.dumps(rows_key)}], columns: maps[{json.dumps(columns_key)}],
                cells: document.querySelectorAll("#matrix rect.cell").length,
                shownRows: [...document.querySelectorAll("#matrix text.row-label")].map((t) => t.dataset.token),
                shownColumns: [...document.querySelectorAll("#matrix text.column-label")].map((t) => t.dataset.token),
            }};
        }})()""")
        check(shown["cells"] == len(shown["rows"]) * len(shown["columns"]) > 0,
              f"{kind}: {shown['cells']} cells for {len(shown['rows'])} x {len(shown['columns'])} tokens")
        check(shown["shownRows"] == shown["rows"] and shown["shownColumns"] == shown["columns"],
              f"{kind}: the labels {shown['shownRows']} / {shown['shownColumns']} are not the tokens "
              f"{shown['rows']} / {shown['columns']}")
    report(f"each kind of attention shows its {len(shown['rows'])} x {len(shown['columns'])} cells "
           "and token labels")
    browser.evaluate("""(() => {
        const kind = document.getElementById("kind");
        kind.value = "cross";
        kind.dispatchEvent(new Event("change", {bubbles: true}));
    })()""")


def check_error_box(browser):
    failed = browser.evaluate("""window.gradformer.start("task=copy&heads=3")
        .then(() => null, (e) => e.message)""")
    check(failed and "heads" in failed, f"a start with 3 heads did not fail as it should: {failed!r}")
    shown = browser.evaluate("""(() => {
        const box = document.getElementById("message");
        return box.hidden || box.getClientRects().length === 0 ? null : box.textContent.trim();
    })()""")
    check(shown and failed in shown, f"the engine's error is not in the message box (it shows {shown!r})")
    report(f"an engine error shows in the message box: {failed!r}")


COPY_SOURCE = "5 6 7 8 9 10 4 5 6 7 2"  # ids, as `transformer decode` reads a line: the copy task's 10, then eos
TOY_SOURCE = "the big red cat sees my dog ."


def decode_in_page(browser, source, beam):
    answer = browser.evaluate(f"""window.gradformer.decode({json.dumps(source)}, {beam})
        .then((d) => ({{output: d.output, rows: d.maps.target_next.length}}),
              (e) => ({{error: e.message}}))""")
    check("error" not in answer, f"the page could not decode {source!r}: {answer.get('error')}")
    return answer


def command(transformer, args, text):
    done = subprocess.run([str(transformer), *args], input=text, capture_output=True, text=True, timeout=300)
    check(done.returncode == 0, f"transformer {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def check_decode(browser):
    """A typed source, greedy and with a beam, and its attention offered as "yours"."""
    for beam in (1, 4):
        answer = decode_in_page(browser, COPY_SOURCE, beam)
        check(answer["output"] == COPY_SOURCE[:-2],
              f"the copy model decodes {COPY_SOURCE!r} (beam {beam}) to {answer['output']!r}")
    shown = browser.evaluate("""[document.getElementById("example").value,
                                 document.querySelectorAll("#matrix rect.cell").length,
                                 document.getElementById("decoded").textContent]""")
    check(shown[0] == "decoded" and shown[1] > 0 and COPY_SOURCE[:-2] in shown[2],
          f"after a decode the attention shows example {shown[0]!r} with {shown[1]} cells, and the "
          f"output line says {shown[2]!r}")
    report(f"{COPY_SOURCE!r} decodes to {answer['output']!r} greedy and with beam 4, and its "
           "attention is shown")


def check_malformed_source(browser):
    failed = browser.evaluate("""window.gradformer.decode("5 x 2").then(() => null, (e) => e.message)""")
    check(failed and '"x"' in failed, f"a source with a word that is not an id decoded, or said {failed!r}")
    shown = browser.evaluate("document.getElementById('message-text').textContent")
    check(shown == failed, f"the message box shows {shown!r}, not the engine's {failed!r}")
    check(status(browser)["state"] in ("running", "finished"), "a malformed source paused the training")
    browser.evaluate("document.getElementById('message-close').click()")
    report(f"\"5 x 2\" is refused with {failed!r}, and the run goes on")


def page_checkpoint(browser, path):
    """The page's checkpoint, written to path."""
    encoded = browser.evaluate("""window.gradformer.checkpoint().then((bytes) => {
        let text = "";
        for (let i = 0; i < bytes.length; i += 0x8000)
            text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        return btoa(text);
    })""")
    path.write_bytes(base64.b64decode(encoded))


def open_in_page(browser, path):
    """Opens path through the page's file input, as a learner's choice of file would; returns
    the page's status once the engine has answered (opened, or an error shown)."""
    browser.evaluate("window.gradformer.status().error === null || document.getElementById('message-close').click()")
    document = browser.send("DOM.getDocument")
    node = browser.send("DOM.querySelector", {"nodeId": document["root"]["nodeId"], "selector": "#open"})
    browser.send("DOM.setFileInputFiles", {"nodeId": node["nodeId"], "files": [str(path)]})
    deadline = time.monotonic() + 30
    while True:
        s = status(browser)
        if s["state"] == "opened" and browser.evaluate("document.getElementById('status').textContent").startswith(path.name):
            return s
        if s["error"] is not None:
            return s
        check(time.monotonic() < deadline, f"opening {path.name} in the page: no answer in 30 s ({s})")
        time.sleep(0.2)


def check_checkpoints(browser, transformer, folder):
    saved = folder / "page.safetensors"
    page_checkpoint(browser, saved)
    for beam in (1, 4):
        in_page = decode_in_page(browser, COPY_SOURCE, beam)["output"]
        native = command(transformer, ["decode", "--ckpt", str(saved), "--beam", str(beam)], COPY_SOURCE + "\n")
        check(native.strip() == in_page, f"the page's checkpoint decodes {COPY_SOURCE!r} (beam {beam}) to "
              f"{in_page!r} in the page and {native.strip()!r} with transformer decode")
    report(f"the page's checkpoint ({saved.stat().st_size} bytes) decodes as in the page with "
           "transformer decode, greedy and beam 4")

    copy = folder / "native-copy.safetensors"
    command(transformer, ["train", "--task", "copy", "--steps", "300", "--seed", "3", "--save", str(copy)], "")
    toy = folder / "native-toy.safetensors"
    command(transformer, ["train", "--task", "toy-translation", "--steps", "300", "--seed", "3", "--save", str(toy)], "")
    for path, source, subcommand in ((copy, COPY_SOURCE, "decode"), (toy, TOY_SOURCE, "translate")):
        opened = open_in_page(browser, path)
        check(opened["error"] is None, f"the page could not open {path.name}: {opened['error']}")
        for beam in (1, 4):
            in_page = decode_in_page(browser, source, beam)["output"]
            native = command(transformer, [subcommand, "--ckpt", str(path), "--beam", str(beam)], source + "\n")
            check(native.strip() == in_page, f"{path.name} decodes {source!r} (beam {beam}) to {in_page!r} in "
                  f"the page and {native.strip()!r} with transformer {subcommand}")
    report(f"checkpoints trained natively open in the page and decode there as transformer decode and "
           f"translate decode them ({TOY_SOURCE!r} -> {in_page!r})")

    not_one = folder / "notes.txt"
    not_one.write_text("attention is all you need\n", encoding="utf-8")
    refused = open_in_page(browser, not_one)
    check(refused["error"] is not None and "notes.txt" in refused["error"],
          f"opening a text file, the page says {refused['error']!r}, which does not name it")
    check(refused["state"] == "opened" and decode_in_page(browser, TOY_SOURCE, 1)["output"] == in_page,
          "after refusing a file, the page no longer decodes with the checkpoint it had open")
    report(f"a file that is not a checkpoint is refused: {refused['error']!r}; the open one stays")


PASTED = ("the cat sees the dog\tel gato ve al perro\n"
          "the dog sees the cat\tel perro ve al gato\n"
          "a cat sleeps on the bed\tun gato duerme en la cama\n"
          "a dog eats on the floor\tun perro come en el suelo\n")


def in_frame(browser, session, expression):
    """The value of expression in the run page's frame, through its own DevTools session: the
    frame is sandboxed, so Chromium runs it apart (an out-of-process frame) and the playground's
    own scripts cannot look inside."""
    result = browser.send_to(session, "Runtime.evaluate", {"expression": expression, "returnByValue": True})
    check("exceptionDetails" not in result, f"evaluating in the run page's frame failed: {result}")
    return result["result"].get("value")


def frame_session(browser):
    browser.evaluate("1")  # takes in the events that arrived meanwhile
    sessions = [e["params"]["sessionId"] for e in browser.events
                if e.get("method") == "Target.attachedToTarget" and e["params"]["targetInfo"]["type"] == "iframe"]
    check(sessions, "the run page's frame never attached")
    return sessions[-1]


def check_live_run_page(browser):
    """While the run trains, the frame's page is redrawn in place with the newer data."""
    wait_for(browser, "the run page's frame", lambda s: browser.evaluate(
        "document.getElementById('run-page').dataset.loaded === 'true'"), 30)
    session = frame_session(browser)
    before = in_frame(browser, session, """(() => { window.checkMark = "kept";
        return Number(document.getElementById("snapshot-slider").max); })()""")
    step = status(browser)["step"]
    wait_for(browser, "two more scores", lambda s: s["step"] >= step + 100 or s["state"] == "finished", 60)
    time.sleep(1.0)  # the page's request and the frame's redrawing
    after = in_frame(browser, session, """[window.checkMark, Number(document.getElementById("snapshot-slider").max),
        window.runPageRefreshedAt]""")
    check(after[0] == "kept", "the run page's frame was loaded again rather than redrawn in place")
    check(after[1] > before and after[2] == after[1] + 1,
          f"the run page's frame shows {after[1] + 1} snapshots 100 steps after it showed {before + 1} "
          f"(its last refresh had {after[2]})")
    report(f"the run page in its frame is redrawn in place as the run trains: {before + 1} snapshots at "
           f"step {step}, {after[1] + 1} 100 steps later")


def check_run_page_view(browser, folder):
    check_live_run_page(browser)
    html = browser.evaluate("window.gradformer.page()")
    opening = '<script type="application/json" id="run-data">'
    check(html and opening in html, "the run's page has no run data")
    start = html.index(opening) + len(opening)
    data = json.loads(html[start:html.index("</script>", start)])
    curves = {c["title"].split(" (")[0]: c for c in data["curves"]}
    check(set(curves) >= {"loss", "learning rate"} and len(data["curves"]) == 3,
          f"the run page's curves are {list(curves)}")
    loss = curves["loss"]["series"]
    check(len(loss) == 2 and loss[0]["faint"] and not loss[1]["faint"] and len(loss[0]["y"]) == len(loss[1]["y"]) > 0,
          f"the loss curve's series: {[(s['name'], s['faint'], len(s['y'])) for s in loss]}")
    check(len(data["snapshots"]) >= 2 and data["samples"] and len(data["attention"]) == 3,
          f"the run page has {len(data['snapshots'])} snapshots, {len(data['samples'])} samples and "
          f"{len(data['attention'])} attention examples")
    shown = browser.evaluate("""(() => { const f = document.getElementById("run-page");
        return !f.hidden && f.getBoundingClientRect().height > 100; })()""")
    check(shown, "the playground's frame for the run's page is hidden")
    page = folder / "run-page.html"
    page.write_text(html, encoding="utf-8")
    checked = subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("check_run_page.py")), str(page)],
                             capture_output=True, text=True, timeout=300)
    check(checked.returncode == 0, f"check_run_page.py fails the playground's run page:\n{checked.stdout}{checked.stderr}")
    report(f"the run's page at step {data['snapshots'][-1]['step']}: {len(data['curves'])} curves, "
           f"{len(data['snapshots'])} snapshots, {len(data['samples'])} samples; shown in the frame, and "
           "check_run_page.py passes it")


def check_pasted_pairs(browser):
    failed = browser.evaluate("""window.gradformer.start({task: "translate", pairs: "one\\tuno\\ntwo dos\\n"})
        .then(() => null, (e) => e.message)""")
    check(failed and "pasted pairs:2" in failed and "tab" in failed,
          f"a pasted pair without a tab was not refused by its line: {failed!r}")
    shown = browser.evaluate("document.getElementById('message-text').textContent")
    check(shown == failed, f"the message box shows {shown!r}, not {failed!r}")
    report(f"a malformed pasted pair is refused: {failed!r}")
    started = browser.evaluate(f"""window.gradformer.start({{task: "translate", steps: 200, pairs: {json.dumps(PASTED)}}})
        .then((settings) => settings.reads, (e) => "error: " + e.message)""")
    check(started == "text", f"pasted pairs did not start a run of text: {started}")
    trained = wait_for(browser, "a BLEU on the pasted pairs",
                       lambda s: s["bleu"] is not None and s["step"] >= 50, 60)
    browser.evaluate("window.gradformer.pause()")
    report(f"{PASTED.count(chr(10))} pasted pairs train: BLEU {trained['bleu']:.1f} on them at step "
           f"{trained['scored_at']}")


LM_BUDGET_S = 150  # the built-in text's 600 steps, from the start to the end of the run
LM_PROMPT = "the big"
LM_SEED = 7
# The knobs of task lm, and the setting of the engine's answer that each one's grey default
# must equal (web/engine.cpp: kLanguageModelDefaults, then the recipe).
LM_KNOBS = {"layers": "layers", "d-model": "d_model", "heads": "heads", "d-ff": "d_ff",
            "max-len": "max_len", "dropout": "dropout", "label-smoothing": "label_smoothing",
            "warmup": "warmup", "lr": "lr", "batch": "batch", "steps": "steps"}
LM_ONLY_KNOBS = ("max-len", "tokenizer", "vocab-size")


def toy_english(transformer, folder):
    """The built-in text as `transformer generate` writes it (its first column): the train and
    dev files, and the set of its words."""
    command(transformer, ["generate", "--out", str(folder / "toy")], "")
    texts = []
    for part in ("train", "dev"):
        lines = (folder / "toy" / f"{part}.tsv").read_text(encoding="utf-8").splitlines()
        text = "".join(line.split("\t")[0] + "\n" for line in lines)
        (folder / f"toy-{part}.txt").write_text(text, encoding="utf-8")
        texts.append(text)
    return folder / "toy-train.txt", folder / "toy-dev.txt", set(texts[0].split())


def set_file_input(browser, selector, path):
    document = browser.send("DOM.getDocument")
    node = browser.send("DOM.querySelector", {"nodeId": document["root"]["nodeId"], "selector": selector})
    browser.send("DOM.setFileInputFiles", {"nodeId": node["nodeId"], "files": [str(path)]})


def check_lm_knobs(browser):
    browser.evaluate("""(() => { const task = document.getElementById("knob-task");
        task.value = "copy"; task.dispatchEvent(new Event("change")); })()""")
    hidden = browser.evaluate(f"""{json.dumps(LM_ONLY_KNOBS)}.map((k) => document.getElementById("row-" + k).hidden)""")
    check(all(hidden), f"for the copy task, the knobs {LM_ONLY_KNOBS} are shown: {hidden}")
    browser.evaluate("""(() => { const task = document.getElementById("knob-task");
        task.value = "lm"; task.dispatchEvent(new Event("change")); })()""")
    shown = browser.evaluate(f"""[{json.dumps(LM_ONLY_KNOBS)}.map((k) => !document.getElementById("row-" + k).hidden),
        !document.getElementById("text-box").hidden, document.getElementById("knob-norm").options[0].text]""")
    check(all(shown[0]) and shown[1] and shown[2] == "pre (default)",
          f"for task lm, the knobs {LM_ONLY_KNOBS} shown {shown[0]}, the text box {shown[1]}, norm's default "
          f"{shown[2]!r}")
    report("task lm shows its own knobs (and its defaults) and the text box; the copy task does not")


def check_lm_refusals(browser, folder):
    """Text the engine cannot train on, and a file that is not UTF-8, are refused with a clear
    message; a text file opened through the file input is what the text box shows."""
    for text, wanted in (("hello world", "too few for one window"), ("one\ntwo\u0000three", "your text:2:")):
        failed = browser.evaluate(f"""window.gradformer.start({{task: "lm", text: {json.dumps(text)}}})
            .then(() => null, (e) => e.message)""")
        check(failed and wanted in failed, f"the text {text!r} was not refused with {wanted!r}: {failed!r}")
        shown = browser.evaluate("document.getElementById('message-text').textContent")
        check(shown == failed, f"the message box shows {shown!r}, not {failed!r}")
        report(f"the text {text!r} is refused: {failed!r}")
    not_text = folder / "notes.bin"
    not_text.write_bytes(b"caf\xe9 au lait\n")  # Latin-1, not UTF-8
    browser.evaluate("document.getElementById('message-close').click()")
    set_file_input(browser, "#text-file", not_text)
    deadline = time.monotonic() + 10
    while not (shown := browser.evaluate("document.getElementById('message').hidden ? null : "
                                         "document.getElementById('message-text').textContent")):
        check(time.monotonic() < deadline, "a file that is not UTF-8 got no message in 10 s")
        time.sleep(0.1)
    check("notes.bin" in shown and "UTF-8" in shown, f"a file that is not UTF-8 is refused with {shown!r}")
    report(f"a file that is not UTF-8 is refused: {shown!r}")
    mine = folder / "mine.txt"
    mine.write_text("Attention is all you need.\nThe decoder alone writes text.\n", encoding="utf-8")
    set_file_input(browser, "#text-file", mine)
    deadline = time.monotonic() + 10
    while browser.evaluate("document.getElementById('text').value") != mine.read_text(encoding="utf-8"):
        check(time.monotonic() < deadline, "a text file opened through the file input is not in the text box")
        time.sleep(0.1)
    size = browser.evaluate("document.getElementById('text-size').textContent")
    check("mine.txt" in size, f"the text box's size line says {size!r}, not the file's name")
    report(f"a text file opened through the file input fills the text box ({size})")


def train_language_model(browser):
    """Starts task lm on the built-in text and watches it to the end. Returns the settings, the
    perplexity of each score by step, and the seconds of the run."""
    started = time.monotonic()
    settings = browser.evaluate("""window.gradformer.start({task: "lm", text: ""})
        .then((s) => s, (e) => ({error: e.message}))""")
    check("error" not in settings, f"task lm did not start: {settings.get('error')}")
    check(settings["decoder_only"] and settings["text"] == "toy English (train)" and settings["reads"] == "text",
          f"task lm started {settings}")
    placeholders = browser.evaluate(f"""Object.fromEntries({json.dumps(list(LM_KNOBS))}.map((k) =>
        [k, document.getElementById("knob-" + k).placeholder]))""")
    wrong = {k: (placeholders[k], settings[v]) for k, v in LM_KNOBS.items()
             if abs(float(placeholders[k]) - settings[v]) > 1e-3 * max(1.0, abs(settings[v]))}
    check(not wrong, f"the lm knobs' defaults differ from the run's settings (knob: default, setting): {wrong}")
    report(f"task lm's knobs show the run's settings as their defaults ({settings['options']})")
    panels = browser.evaluate("""[document.getElementById("sample-panel").hidden,
                                  document.getElementById("decode-panel").hidden]""")
    check(panels == [False, True], f"with a language model, the Sample panel is hidden ({panels[0]}) or Decode "
          f"shown ({not panels[1]})")
    scores = {}
    deadline = started + LM_BUDGET_S
    while True:
        s = status(browser)
        check(s["error"] is None, f"training the language model, the page shows an error: {s['error']}")
        if s["perplexity"] is not None:
            scores[s["scored_at"]] = s["perplexity"]
        if s["state"] == "finished" and s["final"]:
            return settings, scores, s, time.monotonic() - started
        check(time.monotonic() < deadline, f"the language model did not finish in {LM_BUDGET_S} s: {s}")
        time.sleep(0.2)


def words_known(text, words):
    found = text.split()
    return sum(word in words for word in found) / max(1, len(found))


def sample_by_button(browser, prompt, seed):
    """Sets the Sample panel's prompt and seed, clicks Sample, and returns the text it shows."""
    browser.evaluate(f"""(() => {{
        document.getElementById("prompt").value = {json.dumps(prompt)};
        document.getElementById("sample-seed").value = {json.dumps(str(seed))};
        document.getElementById("sampled").replaceChildren();
    }})()""")
    click(browser, "sample")
    deadline = time.monotonic() + 20
    while not (text := browser.evaluate("document.querySelector('#sampled .sample-text')?.textContent ?? null")):
        check(status(browser)["error"] is None, f"sampling, the page shows an error: {status(browser)['error']}")
        check(time.monotonic() < deadline, "the Sample button showed no sample in 20 s")
        time.sleep(0.1)
    return text


def check_language_model(browser, transformer, folder, screenshot, full_page):
    check_lm_knobs(browser)
    check_lm_refusals(browser, folder)
    train, dev, words = toy_english(transformer, folder) if transformer else (None, None, None)
    settings, scores, end, seconds = train_language_model(browser)
    steps = sorted(scores)
    first, last = scores[steps[0]], scores[steps[-1]]
    check(len(steps) >= 5 and last < 0.5 * first, f"the perplexity did not fall: {scores}")
    final = re.search(r"perplexity ([\d.]+) .*the bigram model's ([\d.]+)", end["final"])
    check(final and float(final.group(1)) < float(final.group(2)),
          f"the language model does not beat the bigram model: {end['final']!r}")
    report(f"the language model trains {end['step']} steps in {seconds:.1f} s ({end['steps_per_s']:.1f} steps/s): "
           f"perplexity {first:.1f} at step {steps[0]}, {last:.2f} at step {steps[-1]}; at the end {end['final']}")

    samples = browser.evaluate("window.gradformer.samples()")
    by_step = {s["step"]: s["text"] for s in samples}
    check(0 in by_step and end["step"] in by_step and len(set(by_step.values())) >= 5,
          f"the samples as it trains: steps {sorted(by_step)}, {len(set(by_step.values()))} different texts")
    listed = browser.evaluate("document.querySelectorAll('#samples li').length")
    check(listed == len(samples), f"the panel lists {listed} samples of {len(samples)}")
    if words:
        noise, language = words_known(by_step[0], words), words_known(by_step[end["step"]], words)
        check(noise < 0.5 and language > 0.9, f"the samples went from {noise:.0%} to {language:.0%} words of the "
              f"text:\n{by_step[0]!r}\n{by_step[end['step']]!r}")
        report(f"a sample at each score, {len(samples)} in all, from noise ({noise:.0%} words of the text) to "
               f"language ({language:.0%}): {max(by_step[end['step']].splitlines(), key=len)!r}")
    else:
        report(f"a sample at each score, {len(samples)} in all, each other than the last")

    once, twice = sample_by_button(browser, LM_PROMPT, LM_SEED), sample_by_button(browser, LM_PROMPT, LM_SEED)
    other = sample_by_button(browser, LM_PROMPT, LM_SEED + 1)
    check(once == twice and once.startswith(LM_PROMPT) and other != once,
          f"the Sample button, seed {LM_SEED} twice then {LM_SEED + 1}: {once!r}, {twice!r}, {other!r}")
    report(f"the Sample button with seed {LM_SEED} gives the same text twice, and seed {LM_SEED + 1} another")
    once = sample_by_button(browser, LM_PROMPT, LM_SEED)

    shown = browser.evaluate("""(async () => {
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const kinds = [...document.getElementById("kind").options].filter((o) => !o.hidden).map((o) => o.value);
        const score = document.querySelectorAll("#loss-chart path.series.score").length;
        const axis = [...document.querySelectorAll("#loss-chart text.axis-title")].map((t) => t.textContent);
        return {kinds, example: document.getElementById("example").value, score, axis,
                cells: document.querySelectorAll("#matrix rect.cell").length,
                rows: document.querySelectorAll("#matrix text.row-label").length,
                columns: document.querySelectorAll("#matrix text.column-label").length};
    })()""")
    check(shown["kinds"] == ["decoder"] and shown["example"] == "decoded"
          and shown["cells"] == shown["rows"] * shown["columns"] > 0 and shown["rows"] == shown["columns"],
          f"a language model's attention: {shown}")
    check(shown["score"] == 1 and "perplexity" in shown["axis"], f"the loss chart of a language model: {shown}")
    report(f"a language model's attention is decoder self-attention only ({shown['rows']} x {shown['columns']} "
           "tokens of the sample), and the loss chart has its perplexity axis")
    if screenshot:
        path = screenshot.with_name(f"{screenshot.stem}-lm{screenshot.suffix}")
        # The curves and the attention, then the Sample panel with the samples as it trained.
        browser.evaluate("document.getElementById('status').scrollIntoView()")
        browser.screenshot(path, full_page)
        report(f"screenshot of the language model's run written to {path}")

    refused = browser.evaluate("""window.gradformer.decode("the cat").then(() => null, (e) => e.message)""")
    check(refused and "language model" in refused, f"decoding with a language model: {refused!r}")
    browser.evaluate("document.getElementById('message-close').click()")
    report(f"Decode is refused: {refused!r}")

    html = browser.evaluate("window.gradformer.page()")
    opening = '<script type="application/json" id="run-data">'
    start = html.index(opening) + len(opening)
    data = json.loads(html[start:html.index("</script>", start)])
    check(len(data["samples"]) >= 2 and data["attention"] and not data["attention"][0]["encoder"],
          f"the language model's run page: {len(data['samples'])} samples, {len(data['attention'])} attention examples")
    report(f"the language model's run page has {len(data['samples'])} samples and decoder-only attention")

    if not transformer:
        return
    saved = folder / "page-lm.safetensors"
    page_checkpoint(browser, saved)
    native = command(transformer, ["sample", "--ckpt", str(saved), "--prompt", LM_PROMPT, "--seed", str(LM_SEED),
                                   "--length", "64"], "")
    check(native[:-1] == once, f"the page's checkpoint samples {native[:-1]!r} with transformer sample, and "
          f"{once!r} in the page")
    report("transformer sample gives the page's sample from the page's checkpoint")

    lm = folder / "native-lm.safetensors"
    command(transformer, ["train", "--task", "lm", "--data", str(train), "--dev", str(dev), "--layers", "2",
                          "--d-model", "64", "--d-ff", "256", "--heads", "4", "--max-len", "64", "--steps", "60",
                          "--seed", "3", "--save", str(lm)], "")
    opened = open_in_page(browser, lm)
    check(opened["error"] is None, f"the page could not open {lm.name}: {opened['error']}")
    in_page = sample_by_button(browser, LM_PROMPT, 3)
    native = command(transformer, ["sample", "--ckpt", str(lm), "--prompt", LM_PROMPT, "--seed", "3",
                                   "--length", "64"], "")
    check(native[:-1] == in_page, f"{lm.name} samples {in_page!r} in the page and {native[:-1]!r} with "
          "transformer sample")
    report(f"a language model trained natively opens in the page and samples there as transformer sample does")


def lesson_presets():
    """{fragment: [pages that link to it]} for every link of a lesson to the playground."""
    presets = {}
    for page in sorted(LESSONS.glob("*/*.md")):
        for fragment in re.findall(r"playground\.html#([^)\s]+)\)", page.read_text(encoding="utf-8")):
            presets.setdefault(fragment, []).append(page.relative_to(LESSONS).as_posix())
    return presets


def check_presets(browser):
    """Starts each preset as a link would (page.js reads a link's fragment as start() reads
    this line): the run starts, and the options it was started with hold every setting."""
    presets = lesson_presets()
    check(presets, f"no lesson under {LESSONS} links to the playground")
    for fragment, pages in presets.items():
        wanted = [pair for pair in urllib.parse.parse_qsl(fragment) if pair[0] != "autostart"]
        started = browser.evaluate(f"""window.gradformer.start({json.dumps(fragment)})
            .then(() => location.hash.slice(1), (e) => "error: " + e.message)""")
        check(not started.startswith("error: "),
              f"the preset #{fragment} (linked from {', '.join(pages)}) fails: {started[7:]}")
        used = urllib.parse.parse_qsl(started)
        missing = [f"{k}={v}" for k, v in wanted if (k, v) not in used]
        check(not missing, f"the preset #{fragment} (linked from {', '.join(pages)}) started a run "
              f"without {', '.join(missing)}: #{started}")
        browser.evaluate("window.gradformer.pause()")
    report(f"each of the {len(presets)} presets the lessons link to starts a run with its settings")


def check_clean(browser):
    problems = []
    for event in browser.events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            problems.append(f"JavaScript exception: "
                            f"{details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            problems.append(f"console.{params['type']}: {args}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            problems.append(f"browser log error: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(ALLOWED_SCHEMES):
                problems.append(f"network request for {url}")
    check(not problems, "the page is not clean:\n    " + "\n    ".join(problems))
    requests = sorted({e["params"]["request"]["url"].split(":")[0] for e in browser.events
                       if e["method"] == "Network.requestWillBeSent"})
    report(f"no exception, no console error, no request but {', '.join(requests) or 'none'}")


def run_checks(browser, page, args):
    url = page.as_uri() + "#task=copy&autostart"
    opened = time.monotonic()
    browser.open_page(url, args.width, args.height)
    browser.start_worker()
    print(f"opened {url} at {args.width} x {args.height}")
    wait_for(browser, "the run to start", lambda s: s["state"] == "running", ENGINE_BUDGET_S)
    started = time.monotonic()
    report(f"the engine loaded and the run started {started - opened:.1f} s after opening")
    paused_s = check_buttons(browser)
    elapsed = check_training(browser, started, paused_s)
    check_drawing(browser)
    check_decode(browser)
    if args.screenshot:
        browser.screenshot(args.screenshot, args.full_page)
        report(f"screenshot written to {args.screenshot}")
    check_malformed_source(browser)
    with tempfile.TemporaryDirectory(prefix="playground-") as folder:
        check_run_page_view(browser, pathlib.Path(folder))
        if args.transformer:
            check_checkpoints(browser, args.transformer, pathlib.Path(folder))
    check_error_box(browser)
    check_pasted_pairs(browser)
    with tempfile.TemporaryDirectory(prefix="playground-lm-") as folder:
        check_language_model(browser, args.transformer, pathlib.Path(folder),
                             args.screenshot and pathlib.Path(args.screenshot), args.full_page)
    check_presets(browser)
    check_clean(browser)
    print(f"PASS {page} ({page.stat().st_size} bytes; {TARGET_EXACT:.0%} exact after {elapsed:.1f} s)")


def main():
    return check_main("Check gradformer's playground (one self-contained HTML file) in headless Chromium.",
                      "playground.html",
                      "also save a screenshot, taken once the target score is reached",
                      WorkerBrowser, run_checks, add_arguments)


def add_arguments(parser):
    parser.add_argument("--transformer", type=pathlib.Path,
                        help="the native transformer command: also check checkpoints both ways")


if __name__ == "__main__":
    sys.exit(main())
