#!/usr/bin/env python3
"""Runs each benchmark workload of BENCHMARKS.md twice, ours (bench/*.cpp) and PyTorch's
(bench/torch/workloads.py), one right after the other, so that a change in the machine's load
hits both, and prints a markdown table: our number, PyTorch's and the ratio ours / PyTorch.

  bench/compare.py [--bin build/bin] [--workloads copy-tiny,decode] [--seed 1] [--smoke]
                   [--copy-seeds 5] [--raw out.jsonl]

Both sides run with OMP_WAIT_POLICY=PASSIVE (PyTorch's idle OpenMP threads sleep instead of
spinning; our thread pool does not read it) and OPENBLAS_NUM_THREADS=1 (OpenBLAS's own threads
would fight the OpenMP or pool threads), on 2 threads:
torch.set_num_threads(2) and our --threads 2. PyTorch is Debian's python3-torch, which only
/usr/bin/python3 imports; this script itself runs with any python3.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH_PYTHON = "/usr/bin/python3"
TORCH_SCRIPT = ROOT / "bench" / "torch" / "workloads.py"

# workload -> our program and its arguments
OURS = {
    "copy-tiny": ["copy", "--workload", "copy-tiny"],
    "copy-base": ["copy", "--workload", "copy-base"],
    "base-step": ["base_step"],
    "decode": ["decode"],
    "attn-scaling": ["attn_scaling"],
}

# (key, label, which way is better); a row is printed when either side reports the key.
METRICS = [
    ("ms_per_step", "ms per step", "lower"),
    ("tokens_per_s", "tokens/s", "higher"),
    ("steps_to_100", "steps to 100 copied", "lower"),
    ("seconds_to_100", "seconds to 100 copied", "lower"),
    ("peak_rss_mb", "peak RSS MB", "lower"),
    ("params", "parameters", "equal"),
]


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(command, env):
    """Runs one benchmark; returns its JSON lines. Its table on stderr goes to our stderr."""
    print("$ " + " ".join(str(c) for c in command), file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        print(f"compare.py: exit status {done.returncode} from {command[0]}", file=sys.stderr)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def ratio(ours, theirs):
    if not isinstance(ours, (int, float)) or not isinstance(theirs, (int, float)) or not theirs:
        return "-"
    return f"{ours / theirs:.2f}"


def median_record(records):
    """One record whose every numeric value is the median of the records' values."""
    if not records:
        return {}
    merged = dict(records[0])
    for key, value in records[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            merged[key] = statistics.median(r[key] for r in records if key in r)
    return merged


def rows_for(workload, ours, theirs):
    """Pairs of (label, our result, PyTorch's result) to print for one workload."""
    if workload == "decode":
        cached = [r for r in ours if r.get("cache")]
        recomputed = [r for r in ours if not r.get("cache")]
        return [("decode (ours: cache)", cached[0] if cached else {}, theirs[0] if theirs else {}),
                ("decode (ours: no cache)", recomputed[0] if recomputed else {},
                 theirs[0] if theirs else {})]
    if workload == "attn-scaling":
        key = lambda r: (r.get("layer"), r.get("n"))
        theirs_by_key = {key(r): r for r in theirs}
        return [(f"attn-scaling {r['layer']} n={r['n']}", r, theirs_by_key.get(key(r), {}))
                for r in ours]
    return [(workload, ours[0] if ours else {}, theirs[0] if theirs else {})]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(ROOT / "build" / "bin"),
                        help="where our benchmark programs are (default build/bin)")
    parser.add_argument("--workloads", default=",".join(OURS),
                        help="comma-separated, from: " + ", ".join(OURS))
    parser.add_argument("--smoke", action="store_true",
                        help="pass --smoke to every program (checks the script, not speed)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1, help="passed to both sides")
    parser.add_argument("--copy-seeds", type=int, default=5,
                        help="copy-tiny runs with this many seeds (seed, seed + 1, ...) on each "
                             "side and reports medians: how many steps a run needs to copy "
                             "depends on its initialisation far more than on the framework")
    parser.add_argument("--raw", help="also write every JSON line to this file")
    args = parser.parse_args()

    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in OURS:
            sys.exit(f"compare.py: unknown workload {w!r} (known: {', '.join(OURS)})")
    try:
        probe = subprocess.run([TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:  # no such interpreter
        probe = None
    if probe is None or probe.returncode != 0:
        sys.exit(f"compare.py: {TORCH_PYTHON} cannot import torch. Install Debian's "
                 "python3-torch (apt-get install python3-torch) to compare with PyTorch.")
    torch_version = probe.stdout.strip()
    for w in workloads:
        program = Path(args.bin) / OURS[w][0]
        if not program.exists():
            sys.exit(f"compare.py: {program} not found; build it (cmake --build build --target "
                     f"{OURS[w][0]}) or point --bin at your build's bin/")

    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OPENBLAS_NUM_THREADS="1")
    common = ["--threads", str(args.threads)] + (["--smoke"] if args.smoke else [])
    started, load_before = datetime.datetime.now(), load_average()
    results, raw = {}, []
    for w in workloads:
        seeds = range(args.seed, args.seed + (args.copy_seeds if w == "copy-tiny" else 1))
        ours, theirs = [], []
        for seed in seeds:
            flags = common + ["--seed", str(seed)]
            mine = run([str(Path(args.bin) / OURS[w][0])] + OURS[w][1:] + flags, env)
            reference = run([TORCH_PYTHON, str(TORCH_SCRIPT), w] + flags, env)
            raw += [dict(r, side="ours", seed=seed) for r in mine]
            raw += [dict(r, side="pytorch", seed=seed) for r in reference]
            ours.append(mine)
            theirs.append(reference)
        if len(seeds) > 1:  # one line per side: the medians over the seeds
            ours = [median_record([r for runs in ours for r in runs])]
            theirs = [median_record([r for runs in theirs for r in runs])]
        else:
            ours, theirs = ours[0], theirs[0]
        results[w] = (ours, theirs)
    if args.raw:
        with open(args.raw, "w") as out:
            for r in raw:
                out.write(json.dumps(r) + "\n")

    print(f"## gradformer vs PyTorch {torch_version}"
          + (" (--smoke: not a measurement)" if args.smoke else ""))
    print()
    print(f"- date: {started:%Y-%m-%d %H:%M}, {(datetime.datetime.now() - started).seconds} s")
    print(f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores; threads: {args.threads}")
    print(f"- load average (1, 5, 15 min) before: {load_before}; after: {load_average()}")
    print("- both sides: OMP_WAIT_POLICY=PASSIVE, OPENBLAS_NUM_THREADS=1")
    if "copy-tiny" in workloads and args.copy_seeds > 1:
        print(f"- copy-tiny: medians over seeds {args.seed} to {args.seed + args.copy_seeds - 1}")
    print()
    print("| workload | metric | ours | PyTorch | ours / PyTorch | better |")
    print("|---|---|---:|---:|---:|---|")
    mismatched = []
    for w, (ours, theirs) in results.items():
        for label, mine, reference in rows_for(w, ours, theirs):
            if mine.get("params") is not None and reference.get("params") is not None \
                    and mine["params"] != reference["params"]:
                mismatched.append(f"{label}: {mine['params']} vs {reference['params']}")
            for key, name, better in METRICS:
                if key not in mine and key not in reference:
                    continue
                if w == "attn-scaling" and key == "params":
                    continue
                print(f"| {label} | {name} | {fmt(mine.get(key))} | {fmt(reference.get(key))} "
                      f"| {ratio(mine.get(key), reference.get(key))} | {better} |")
    if mismatched:
        print("\nparameter counts differ (the twins are not the same model): "
              + "; ".join(mismatched))


if __name__ == "__main__":
    main()
