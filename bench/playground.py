#!/usr/bin/env python3
"""The browser edition's speed against the native build, on the same run side by side.

The run is the copy task with `transformer train`'s defaults (seed 1), trained three ways:
  native     build/bin/transformer train --threads 1 (and --threads 2, for scale): the library
             compiled for this CPU (AVX-512 or NEON, fused multiply-add, its own thread pool);
  node       the engine (build-wasm/bin/gradformer_engine.js) under Node: WebAssembly with
             128-bit SIMD on one thread, nothing else running;
  page       the playground (build-wasm/playground.html) in headless Chromium from its file,
             the engine in its Web Worker, the page drawing as it trains.
For each it reports the milliseconds per training step (the engine's own time inside its steps
for node and page, the command's "N steps in X s" natively), and for the page also the wall time
per step from start to finish (the worker's scoring, attention maps and messages included) and
the training time until 100 fresh sequences were copied exactly (checked every 50 steps). The
ratio to native at one thread is the number to read: WebAssembly in a page has one thread.
Runs alternate (native, node, page, then again) so that a change of the machine's load falls on
all three; with --repeats R each number is the median of R runs.

With --task lm the run is the playground's language model instead: the engine's defaults on its
built-in text (web/engine.cpp), and natively the same options as flags on the same text (the
first column of `transformer generate`'s files). Its score is the dev perplexity, and for the
page the time until it is below the bigram model's (which the run's last line gives).

JSON lines on stdout (as the other benchmarks print), a table on stderr.

    bench/playground.py                    # 600 steps, one run each
    bench/playground.py --repeats 3
    bench/playground.py --task lm --repeats 3
    bench/playground.py --smoke            # 40 steps: checks the script, not the speed
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from check_playground import WorkerBrowser, status  # noqa: E402
from check_run_page import find_chromium  # noqa: E402

NODE_DRIVER = """
const [enginePath, options] = process.argv.slice(1);
require(enginePath)().then((engine) => {
  const call = (name, types, args) => {
    const answer = JSON.parse(engine.ccall(name, "string", types, args));
    if (answer.error) throw new Error(`${name}: ${answer.error}`);
    return answer;
  };
  const started = call("gf_start", ["string", "string"], [options, ""]);
  if (process.argv[3] === "options") return console.log(JSON.stringify(started.settings.options));
  let s;
  do s = call("gf_step", ["number", "number"], [50, 1e9]); while (s.state !== "finished");
  console.log(JSON.stringify({steps_per_s: s.steps_per_s, score: call("gf_score", [], []).score}));
});
"""


def engine_options(engine, task, steps):
    """The options line the engine runs task with, its own defaults filled in."""
    done = subprocess.run([shutil.which("node"), "-e", NODE_DRIVER, str(engine.resolve()),
                           f"task={task}&seed=1&steps={steps}", "options"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def flags_of(options):
    """An options line as `transformer train` flags (training/run_options.h): norm=pre is
    --norm-first, tied=false --no-tied."""
    flags = []
    for key, value in urllib.parse.parse_qsl(options):
        if key == "norm":
            flags += ["--norm-first"] if value == "pre" else []
        elif key == "tied":
            flags += ["--no-tied"] if value == "false" else []
        else:
            flags += [f"--{key}", value]
    return flags


def built_in_text(transformer, folder):
    """The engine's built-in text for task lm, as files: the first column of the toy language's
    train.tsv and dev.tsv (transformer generate, seed 1)."""
    subprocess.run([str(transformer), "generate", "--out", str(folder / "toy")], capture_output=True, check=True)
    files = []
    for part in ("train", "dev"):
        lines = (folder / "toy" / f"{part}.tsv").read_text(encoding="utf-8").splitlines()
        (folder / f"{part}.txt").write_text("".join(line.split("\t")[0] + "\n" for line in lines), encoding="utf-8")
        files += [f"--{'data' if part == 'train' else 'dev'}", str(folder / f"{part}.txt")]
    return files


def native(transformer, steps, threads, folder, flags):
    """flags: those of the task (--task copy, or lm's options and text)."""
    done = subprocess.run([str(transformer), "train", *flags, "--seed", "1", "--steps", str(steps),
                           "--threads", str(threads), "--snapshots", "0", "--save", str(folder / "native.safetensors")],
                          capture_output=True, text=True, check=True)
    took = re.search(rf"{steps} steps in ([\d.]+)s", done.stdout + done.stderr)
    score = re.search(r"exact: ([\d.]+)% of 100|^perplexity ([\d.]+)", done.stdout, re.MULTILINE)
    if not took or not score:
        raise SystemExit(f"bench/playground.py: transformer train printed no timing:\n{done.stdout}")
    return {"ms_per_step": 1000 * float(took.group(1)) / steps,
            "score": float(score.group(1)) / 100 if score.group(1) else float(score.group(2))}


def node(engine, steps, task):
    node_path = shutil.which("node")
    if node_path is None:
        raise SystemExit("bench/playground.py: node is not installed (scripts/install-deps.sh)")
    done = subprocess.run([node_path, "-e", NODE_DRIVER, str(engine.resolve()), f"task={task}&seed=1&steps={steps}"],
                          capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return {"ms_per_step": 1000 / answer["steps_per_s"], "score": answer["score"]}


def page(page_path, steps, chromium, task):
    """The copy task: the time to 100% exact. The language model: the time until its dev
    perplexity is below the bigram model's, which the run's last line gives."""
    browser = WorkerBrowser(chromium)
    try:
        browser.open_page(page_path.resolve().as_uri() + f"#task={task}&seed=1&steps={steps}&autostart", 1366, 768)
        browser.start_worker()
        deadline = time.monotonic() + 60
        while status(browser)["state"] != "running":
            if time.monotonic() > deadline or status(browser)["error"]:
                raise SystemExit(f"bench/playground.py: the page did not start: {status(browser)}")
            time.sleep(0.05)
        started = time.monotonic()
        scores = []  # (seconds, step, score) of each score
        while True:
            s = status(browser)
            score = s["exact"] if task == "copy" else s["perplexity"]
            if score is not None and (not scores or scores[-1][1] != s["scored_at"]):
                scores.append((time.monotonic() - started, s["scored_at"], score))
            if (s["state"] == "finished" and (task == "copy" or s["final"])) or s["error"]:
                break
            time.sleep(0.05)
        wall = time.monotonic() - started
        if s["error"]:
            raise SystemExit(f"bench/playground.py: the page failed: {s['error']}")
        if task == "copy":
            reached = lambda score: score == 1  # noqa: E731
        else:
            bigram = float(re.search(r"the bigram model's ([\d.]+)", s["final"]).group(1))
            reached = lambda score: score < bigram  # noqa: E731
        first = next(((seconds, step) for seconds, step, score in scores if reached(score)), (None, None))
        return {"ms_per_step": 1000 / s["steps_per_s"], "wall_ms_per_step": 1000 * wall / steps,
                "score": scores[-1][2], "seconds_to_goal": first[0], "steps_to_goal": first[1],
                "seconds": wall}
    finally:
        browser.close()


def median_of(runs):
    keys = runs[0].keys()
    out = {}
    for key in keys:
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = statistics.median(values) if values else None
    return out


def main():
    parser = argparse.ArgumentParser(description="The playground's speed against the native build, side by side.")
    parser.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "bin", help="the native build's bin/")
    parser.add_argument("--wasm", type=pathlib.Path, default=ROOT / "build-wasm", help="the wasm build")
    parser.add_argument("--steps", type=int, default=600, help="training steps of the run (default 600)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each; the median is reported")
    parser.add_argument("--smoke", action="store_true", help="40 steps, once: checks the script")
    parser.add_argument("--chromium", help="the browser (default: $CHROMIUM, or chromium on the PATH)")
    parser.add_argument("--task", choices=("copy", "lm"), default="copy",
                        help="copy (transformer train's defaults) or lm (the playground's language model)")
    args = parser.parse_args()
    steps, repeats = (40, 1) if args.smoke else (args.steps, args.repeats)
    transformer = args.bin / "transformer"
    engine, page_path = args.wasm / "bin" / "gradformer_engine.js", args.wasm / "playground.html"
    for needed, how in ((transformer, "cmake --build --preset release"), (engine, "scripts/test-wasm.sh"),
                        (page_path, "scripts/test-wasm.sh")):
        if not needed.is_file():
            raise SystemExit(f"bench/playground.py: {needed} is missing; build it with {how}")
    chromium = find_chromium(args.chromium)
    if chromium is None:
        raise SystemExit("bench/playground.py: chromium is not installed (scripts/install-deps.sh)")

    runs = {"native-1": [], "native-2": [], "node": [], "page": []}
    task = args.task
    with tempfile.TemporaryDirectory(prefix="bench-playground-") as folder:
        folder = pathlib.Path(folder)
        flags, shown = ["--task", "copy"], "the copy task, transformer train's defaults"
        if task == "lm":
            options = engine_options(engine, task, steps)
            # seed and steps: native() gives them.
            kept = urllib.parse.urlencode([(k, v) for k, v in urllib.parse.parse_qsl(options)
                                           if k not in ("seed", "steps")])
            flags = flags_of(kept) + built_in_text(transformer, folder)
            shown = f"the playground's language model ({' '.join(flags_of(kept))}, the built-in text)"
        for _ in range(repeats):
            runs["native-1"].append(native(transformer, steps, 1, folder, flags))
            runs["node"].append(node(engine, steps, task))
            runs["page"].append(page(page_path, steps, chromium, task))
            runs["native-2"].append(native(transformer, steps, 2, folder, flags))
    results = {name: median_of(r) for name, r in runs.items()}
    base = results["native-1"]["ms_per_step"]
    rows = [("native, 1 thread", "native-1", 1), ("native, 2 threads", "native-2", 2),
            ("WebAssembly under Node", "node", 1), ("WebAssembly in the page", "page", 1)]
    for label, name, threads in rows:
        # The copy task's fields keep the names bench/compare.py reads.
        names = ({"score": "exact", "steps_to_goal": "steps_to_100", "seconds_to_goal": "seconds_to_100"}
                 if task == "copy" else
                 {"score": "perplexity", "steps_to_goal": "steps_to_bigram", "seconds_to_goal": "seconds_to_bigram"})
        fields = {names.get(key, key): value for key, value in results[name].items()}
        line = {"workload": f"playground-{task}", "runtime": name, "threads": threads, "steps": steps,
                "repeats": repeats, **fields, "ratio_to_native_1_thread": results[name]["ms_per_step"] / base}
        print(json.dumps(line))
    size = page_path.stat().st_size
    print(json.dumps({"workload": "playground-size", "bytes": size}))

    load = os.getloadavg()[0]
    print(f"\n{shown}, seed 1, {steps} steps; median of {repeats}; load average {load:.2f}", file=sys.stderr)
    score_name = "exact" if task == "copy" else "dev ppl"
    print(f"{'':26} {'ms/step':>8} {'x native 1':>10} {score_name:>8}", file=sys.stderr)
    for label, name, _ in rows:
        r = results[name]
        score = f"{r['score']:8.0%}" if task == "copy" else f"{r['score']:8.2f}"
        print(f"{label:26} {r['ms_per_step']:8.1f} {r['ms_per_step'] / base:10.2f} {score}", file=sys.stderr)
    p = results["page"]
    print(f"the page: {p['wall_ms_per_step']:.1f} ms per step from start to finish, with its scoring and "
          f"drawing ({p['seconds']:.1f} s)", file=sys.stderr)
    if p["seconds_to_goal"] is not None:
        goal = "100% exact" if task == "copy" else "a dev perplexity below the bigram model's"
        print(f"the page: {goal} at step {p['steps_to_goal']:.0f}, {p['seconds_to_goal']:.1f} s after "
              "the start", file=sys.stderr)
    print(f"the page: {size} bytes ({size / 2**20:.2f} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
