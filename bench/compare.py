#!/usr/bin/env python3
"""Runs each benchmark workload of bench/README.md twice, ours (bench/*.cpp) and PyTorch's
(bench/torch/workloads.py), one right after the other, so that a change in the machine's load
hits both, and prints a markdown table: our number, PyTorch's and the ratio ours / PyTorch.

  bench/compare.py [--bin build/bin] [--workloads copy-tiny,decode] [--seed 1] [--smoke]
                   [--threads 2] [--rounds 3] [--copy-seeds 5] [--no-probe] [--raw out.jsonl]
  bench/compare.py --ab OTHER/bin [...]     two builds of ours, A (--bin) against B

Each workload runs in rounds, ours then PyTorch's, round after round (copy-tiny: one round a
seed), and the table gives each side's median with the ratio's spread over the rounds (min,
median, max): on a shared machine the ratio of two programs moves with the load, and the
spread shows by how much. Beside the times it gives each side's distance from the machine's
limit, measured by our program in the same round (autograd/kernels/roofline.h): the matrix
products' GFLOP/s as a fraction of the FMA peak for training (both sides do the same products,
counted by models/flops.h), and for decoding the time over its floor (its products at the peak
and its reads of weights and cache at the memory bandwidth). For our training steps it also
gives a ceiling below the peak: the fraction a step would reach with its products alone, each
shape timed on its own (autograd/kernels/gemm_log.h).

--ab runs two builds of ours against each other in the same alternation, both with --threads
N and no probes: the before-and-after measurement of a change.

Each side runs each workload in its fastest setup on this machine. Before a workload's full
run, every candidate setup of each side runs a short probe (the full run's model and batch,
fewer steps), and the full run uses the side's fastest; the table says which won and what every
probe took. A probe still running at three times the fastest one's time (plus 10 s) is
stopped. The candidates, with N = --threads:

  ours     --threads 1 and N. Our pool reads nothing else: no OpenMP, and these programs
           do not call BLAS.
  PyTorch  torch.set_num_threads 1 and N (its OpenMP pool for element-wise ops, reductions
           and oneDNN), times OPENBLAS_NUM_THREADS 1 and N (Debian's torch does its matrix
           products in OpenBLAS, which keeps a pthreads pool of its own), times OMP_WAIT_POLICY
           PASSIVE (idle OpenMP threads sleep at once, leaving the core to OpenBLAS) or unset
           (libgomp spins a while first, which hands the next op over sooner); with one torch
           thread there is no OpenMP pool, so the policy is not varied. When the environment
           sets OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE (some machines pin OpenBLAS to older
           kernels to avoid bugs of older releases), each candidate also runs with both unset,
           so that OpenBLAS picks its kernels from the CPU; workloads.py checks its products
           against a reference before timing, so a wrong kernel stops rather than wins.
           Inter-op threads are left alone: eager training and decoding start no inter-op
           work, and the CPU autograd engine runs backward on the calling thread.

--no-probe skips the probes: ours runs with --threads N, PyTorch with torch threads N and the
environment as given (for example OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
bench/compare.py --no-probe reproduces the setup used before probing existed). With --smoke
every run is a smoke run and only two candidates per side are probed: it checks the script.

PyTorch is Debian's python3-torch, which only /usr/bin/python3 imports; this script itself runs
with any python3.
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
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

# Our flags for a probe: the full run's model and batch with fewer steps. copy-base and decode
# have no shorter mode, so their probe is a whole run (a few seconds each).
OURS_PROBE = {
    "copy-tiny": ["--smoke"],  # 25 steps of the full model and batch, 20 of them timed
    "copy-base": [],
    "base-step": ["--steps", "1"],
    "decode": [],
    "attn-scaling": ["--max-n", "512"],
}

# Pin OpenBLAS to a kernel set and cache size (see the docstring); unset together or not at all.
OPENBLAS_CPU_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# (key, label, which way is better); a row is printed when either side reports the key.
METRICS = [
    ("ms_per_step", "ms per step", "lower"),
    ("tokens_per_s", "tokens/s", "higher"),
    ("steps_to_100", "steps to 100 copied", "lower"),
    ("seconds_to_100", "seconds to 100 copied", "lower"),
    ("fraction_of_peak", "fraction of the FMA peak", "higher"),
    ("products_alone_fraction", "ceiling: its products alone", "higher"),
    ("times_floor", "time / its floor", "lower"),
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


@dataclass(frozen=True)
class Setup:
    """One way to run one side: a thread count and the environment variables it changes
    (None: removed from the environment)."""
    threads: int
    env: tuple = ()  # ((name, value or None), ...): a tuple, so that a Setup is hashable

    def environment(self):
        env = dict(os.environ)
        for name, value in self.env:
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def describe(self, side, record=None):
        if side == "ours" or not self.env and record and "torch_threads" not in record:
            return f"--threads {self.threads}"
        env = dict(self.env)
        words = [f"torch threads {self.threads}"]
        for name in ("OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"):
            value = env[name] if name in env else os.environ.get(name)
            words.append(f"{name}={value if value is not None else 'unset'}")
        core = (record or {}).get("blas_core")
        unpinned = any(name in env and env[name] is None for name in OPENBLAS_CPU_VARS)
        if core or unpinned:
            words.append(f"OpenBLAS kernels {core or '?'}"
                         + (" (OPENBLAS_CORETYPE, _L2_SIZE unset)" if unpinned else ""))
        return ", ".join(words)


def our_setups(threads):
    return [Setup(t) for t in sorted({1, threads})]


def torch_setups(threads):
    kernels = [()]  # OpenBLAS's kernels as the environment pins them, if it does
    if any(name in os.environ for name in OPENBLAS_CPU_VARS):
        kernels.append(tuple((name, None) for name in OPENBLAS_CPU_VARS))
    setups = []
    for torch_threads in sorted({1, threads}):
        for blas_threads in sorted({1, threads}):
            # The wait policy is how torch's idle OpenMP workers wait; one thread has none.
            for wait in ("PASSIVE", None) if torch_threads > 1 else (None,):
                for pin in kernels:
                    env = (("OPENBLAS_NUM_THREADS", str(blas_threads)),
                           ("OMP_WAIT_POLICY", wait)) + pin
                    setups.append(Setup(torch_threads, env))
    return setups


def run(command, env, timeout=None):
    """Runs one benchmark; returns its JSON lines. Its table on stderr goes to our stderr.
    After timeout seconds it is stopped and returns none."""
    print("$ " + " ".join(str(c) for c in command), file=sys.stderr, flush=True)
    try:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"compare.py: stopped after {timeout:.0f} s, far slower than the fastest probe",
              file=sys.stderr)
        return []
    if done.returncode != 0:
        print(f"compare.py: exit status {done.returncode} from {command[0]}", file=sys.stderr)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def candidate_setups(args):
    """The setups each side's probes choose from (see the docstring)."""
    if args.no_probe or args.ab:
        return {"ours": [Setup(args.threads)], "pytorch": [Setup(args.threads)]}
    torch = torch_setups(args.threads)
    if args.smoke:  # the first and the last: enough to check the probing, and quick
        torch = [torch[0], torch[-1]] if len(torch) > 1 else torch
    return {"ours": our_setups(args.threads), "pytorch": torch}


def command(args, side, workload, setup, seed, probe=False):
    """The command line of one run (or probe) of one side."""
    if side == "ours" or args.ab:
        extra = OURS_PROBE[workload] if probe else []
        bin_dir = args.bin if side == "ours" else args.ab
        start = [str(Path(bin_dir) / OURS[workload][0])] + OURS[workload][1:]
    else:
        extra = ["--probe"] if probe else []
        start = [TORCH_PYTHON, str(TORCH_SCRIPT), workload]
    if args.smoke:  # a smoke run is short already; its probes are smoke runs too
        extra = ["--smoke"]
    return start + extra + ["--threads", str(setup.threads), "--seed", str(seed)]


def probe_score(workload, records):
    """What a probe is ranked by: its ms per step (decode: with the cache, the row the
    table leads with; attn-scaling: the sum over every layer and n). inf if it printed none."""
    if workload == "decode":  # the cached row, on both sides
        records = sorted(records, key=lambda r: not r.get("cache"))
    if workload != "attn-scaling":
        records = records[:1]
    times = [r["ms_per_step"] for r in records if isinstance(r.get("ms_per_step"), (int, float))]
    return sum(times) if times else math.inf


@dataclass
class Choice:
    """The setup a side runs a workload in, and the probes that chose it."""
    setup: Setup
    probes: list = field(default_factory=list)  # (setup, score, JSON lines), in run order

    def probe_records(self):
        """The JSON lines of the chosen setup's probe ([] when nothing was probed)."""
        return next((records for setup, _, records in self.probes if setup == self.setup), [])


def fastest(workload, setups, command_for):
    """Runs a short probe in each setup; returns a Choice of the one with the lowest score.
    A single candidate is not probed. A probe that takes more than three times as long as the
    fastest so far (plus 10 s for starting up) is stopped: it cannot win, and a setup with more busy threads than cores
    (two pools spinning at once) can be ten times slower."""
    if len(setups) == 1:
        return Choice(setups[0])
    probes, quickest = [], math.inf
    for setup in setups:
        start = time.monotonic()
        records = run(command_for(setup), setup.environment(),
                      timeout=3 * quickest + 10 if quickest < math.inf else None)
        if records:
            quickest = min(quickest, time.monotonic() - start)
        probes.append((setup, probe_score(workload, records), records))
    best, score, _ = min(probes, key=lambda probe: probe[1])
    if score == math.inf:
        sys.exit(f"compare.py: every probe of {workload} failed")
    return Choice(best, probes)


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def numbers(values):
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def with_limits(mine, reference):
    """The other side's record with its distance from the machine's limits, where it does not
    report one itself (PyTorch), from our run of the same round: the same products (our
    gflop_per_step) over its own time against our measured peak, or its time over our floor."""
    reference = dict(reference)
    ms = reference.get("ms_per_step")
    if "fraction_of_peak" not in reference and ms and mine.get("gflop_per_step") \
            and mine.get("peak_gflops"):
        reference["fraction_of_peak"] = mine["gflop_per_step"] / (ms * 1e-3) / mine["peak_gflops"]
    if "times_floor" not in reference and ms and mine.get("floor_ms"):
        reference["times_floor"] = ms / mine["floor_ms"]
    return reference


def rows_for(workload, ours, theirs):
    """Pairs of (label, our result, PyTorch's result) to print for one workload."""
    if workload == "decode":
        cached = [r for r in ours if r.get("cache")]
        recomputed = [r for r in ours if not r.get("cache")]
        def twin(cache):  # the other side's run with the same cache setting, if it has one
            same = [r for r in theirs if r.get("cache") == cache]
            return same[0] if same else theirs[0] if theirs else {}
        return [("decode (cache)", cached[0] if cached else {}, twin(True)),
                ("decode (no cache)", recomputed[0] if recomputed else {}, twin(False))]
    if workload == "attn-scaling":
        key = lambda r: (r.get("layer"), r.get("n"))
        theirs_by_key = {key(r): r for r in theirs}
        return [(f"attn-scaling {r['layer']} n={r['n']}", r, theirs_by_key.get(key(r), {}))
                for r in ours]
    return [(workload, ours[0] if ours else {}, theirs[0] if theirs else {})]


def print_setups(workloads, choices, results, other="PyTorch"):
    """Which setup each side ran each workload in, then every probe's score (ms per step;
    attn-scaling: summed over its rows), the chosen one marked *."""
    print("\nSetups used:\n")
    for w in workloads:
        ours, theirs = results[w][0]
        print(f"- {w}: ours {choices[w]['ours'].setup.describe('ours')}; {other} "
              f"{choices[w]['pytorch'].setup.describe('pytorch', theirs[0] if theirs else None)}")
    probed = [w for w in workloads if any(c.probes for c in choices[w].values())]
    if not probed:
        return
    print("\nProbes, ms per step (attn-scaling: the sum over its layers and n up to the probe's; "
          "* = chosen; - = stopped at three times the fastest probe's time plus 10 s, or "
          "failed). A probe is a shorter run of its own side (OURS_PROBE; workloads.py --probe, "
          "whose decode probe decodes 16 tokens, not 32): compare the setups of one side, not "
          "the two sides' probes:\n")
    print("| side | setup | " + " | ".join(probed) + " |")
    print("|---|---|" + "---:|" * len(probed))
    for side in ("ours", "pytorch"):
        rows = {}  # setup -> {workload: cell}, in the order the candidates ran
        for w in probed:
            choice = choices[w][side]
            for setup, score, records in choice.probes:
                row = rows.setdefault(setup, {"record": None})
                row["record"] = row["record"] or (records[0] if records else None)
                row[w] = ("-" if score == math.inf else fmt(score)) \
                    + (" *" if setup == choice.setup else "")
        for setup, row in rows.items():
            cells = " | ".join(row.get(w, "") for w in probed)
            name = "ours" if side == "ours" else "PyTorch"
            print(f"| {name} | {setup.describe(side, row['record'])} | {cells} |")


def torch_version_or_exit():
    """The version of the torch that TORCH_PYTHON imports; exits saying how to install it."""
    try:
        probe = subprocess.run([TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:  # no such interpreter
        probe = None
    if probe is None or probe.returncode != 0:
        sys.exit(f"compare.py: {TORCH_PYTHON} cannot import torch. Install Debian's "
                 "python3-torch (apt-get install python3-torch) to compare with PyTorch.")
    return probe.stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(ROOT / "build" / "bin"),
                        help="where our benchmark programs are (default build/bin)")
    parser.add_argument("--workloads", default=",".join(OURS),
                        help="comma-separated, from: " + ", ".join(OURS))
    parser.add_argument("--smoke", action="store_true",
                        help="pass --smoke to every program (checks the script, not speed)")
    parser.add_argument("--threads", type=int, default=2,
                        help="the most threads a candidate setup uses (default 2, the cores "
                             "here); 1 is always a candidate too")
    parser.add_argument("--no-probe", action="store_true",
                        help="no probes: ours on --threads, PyTorch on --threads torch threads "
                             "with the environment as given")
    parser.add_argument("--seed", type=int, default=1, help="passed to both sides")
    parser.add_argument("--copy-seeds", type=int, default=5,
                        help="copy-tiny runs with this many seeds (seed, seed + 1, ...) on each "
                             "side and reports medians: how many steps a run needs to copy "
                             "depends on its initialisation far more than on the framework")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each side of each workload, alternating (copy-tiny runs "
                             "--copy-seeds rounds instead)")
    parser.add_argument("--ab", metavar="OTHER_BIN",
                        help="compare two builds of ours: --bin (A) against this bin/ (B), "
                             "both on --threads, no probes and no PyTorch")
    parser.add_argument("--raw", help="also write every JSON line to this file")
    args = parser.parse_args()

    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in OURS:
            sys.exit(f"compare.py: unknown workload {w!r} (known: {', '.join(OURS)})")
    torch_version = None if args.ab else torch_version_or_exit()
    for bin_dir, flag in [(args.bin, "--bin")] + ([(args.ab, "--ab")] if args.ab else []):
        for w in workloads:
            program = Path(bin_dir) / OURS[w][0]
            if not program.exists():
                sys.exit(f"compare.py: {program} not found; build it (cmake --build build "
                         f"--target {OURS[w][0]}) or point {flag} at a build's bin/")

    candidates = candidate_setups(args)
    started, load_before = datetime.datetime.now(), load_average()
    results, choices, raw = {}, {}, []
    for w in workloads:
        # Ours first, then PyTorch's, for the probes as for the runs.
        choices[w] = {
            side: fastest(w, candidates[side],
                          lambda setup: command(args, side, w, setup, args.seed, probe=True))
            for side in ("ours", "pytorch")
        }
        for side, choice in choices[w].items():
            raw += [dict(record, side=side, probe=True, seed=args.seed)
                    for _, _, records in choice.probes for record in records]
        mine_setup, torch_setup = choices[w]["ours"].setup, choices[w]["pytorch"].setup
        # copy-tiny: a seed a round (how soon a run copies depends on its start far more than
        # on the framework); the others: the same seed every round.
        copy_tiny = w == "copy-tiny"
        rounds = []
        for r in range(args.copy_seeds if copy_tiny else args.rounds):
            seed = args.seed + r if copy_tiny else args.seed
            if args.smoke and r == 0 and choices[w]["ours"].probes \
                    and choices[w]["pytorch"].probes:
                # A smoke probe is the smoke run itself: keep its lines rather than run it again.
                rounds.append((choices[w]["ours"].probe_records(),
                               choices[w]["pytorch"].probe_records()))
                continue
            mine = run(command(args, "ours", w, mine_setup, seed), mine_setup.environment())
            reference = run(command(args, "pytorch", w, torch_setup, seed),
                            torch_setup.environment())
            raw += [dict(rec, side="ours", seed=seed, round=r + 1) for rec in mine]
            raw += [dict(rec, side="B" if args.ab else "pytorch", seed=seed, round=r + 1)
                    for rec in reference]
            rounds.append((mine, reference))
        results[w] = rounds
    if args.raw:
        with open(args.raw, "w") as out:
            for r in raw:
                out.write(json.dumps(r) + "\n")

    title = (f"gradformer, two builds: A ({Path(args.bin).resolve()}) against B "
             f"({Path(args.ab).resolve()})" if args.ab
             else f"gradformer vs PyTorch {torch_version}")
    print(f"## {title}"
          + (" (--smoke: not a measurement)" if args.smoke else ""))
    print()
    print(f"- date: {started:%Y-%m-%d %H:%M}, {(datetime.datetime.now() - started).seconds} s")
    print(f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores; at most {args.threads} "
          "threads a side")
    print(f"- load average (1, 5, 15 min) before: {load_before}; after: {load_average()}")
    print("- setups: " + (f"both --threads {args.threads} (--ab)" if args.ab else
                          "as given (--no-probe)" if args.no_probe else
                          "each side's fastest in short probes, listed under the table"))
    print(f"- rounds: {args.rounds} a workload, each side once a round, alternating; the table "
          "gives medians over the rounds")
    if "copy-tiny" in workloads and args.copy_seeds > 1:
        print(f"- copy-tiny: one round a seed, seeds {args.seed} to "
              f"{args.seed + args.copy_seeds - 1}")
    if not args.ab:
        print("- fraction of the FMA peak: the matrix products' GFLOP/s (models/flops.h, the same "
              "count for both sides) over the peak our program measured in the same round; "
              "time / its floor (decode): over the least time its products and reads could take "
              "at that peak and the measured memory bandwidth")
        print("- ceiling: its products alone (ours only): the fraction of the FMA peak a step would "
              "reach if it did nothing but its matrix products, each shape timed on its own "
              "(autograd/kernels/gemm_log.h), an optimistic estimate that a step of ours "
              "should stay below")
    print()
    other = "B" if args.ab else "PyTorch"
    mine_name = "A" if args.ab else "ours"
    print(f"| workload | metric | {mine_name} | {other} | {mine_name} / {other} "
          "| min, max over rounds | better |")
    print("|---|---|---:|---:|---:|---:|---|")
    mismatched = []
    for w, rounds in results.items():
        rows = {}  # label -> [(ours, theirs) of each round]
        for ours, theirs in rounds:
            for label, mine, reference in rows_for(w, ours, theirs):
                rows.setdefault(label, []).append((mine, with_limits(mine, reference)))
        for label, pairs in rows.items():
            mine, reference = pairs[0]
            if mine.get("params") is not None and reference.get("params") is not None \
                    and mine["params"] != reference["params"]:
                mismatched.append(f"{label}: {mine['params']} vs {reference['params']}")
            for key, name, better in METRICS:
                if all(key not in m and key not in r for m, r in pairs):
                    continue
                if w == "attn-scaling" and key == "params":
                    continue
                ours_values = numbers(m.get(key) for m, _ in pairs)
                their_values = numbers(r.get(key) for _, r in pairs)
                ratios = [m[key] / r[key] for m, r in pairs
                          if numbers([m.get(key), r.get(key)]) == [m.get(key), r.get(key)]
                          and r[key]]
                median = lambda v: statistics.median(v) if v else None
                middle = f"{median(ratios):.2f}" if ratios else "-"
                ends = f"{min(ratios):.2f}, {max(ratios):.2f}" if len(ratios) > 1 else "-"
                print(f"| {label} | {name} | {fmt(median(ours_values))} "
                      f"| {fmt(median(their_values))} | {middle} | {ends} | {better} |")
    if mismatched:
        print("\nparameter counts differ (the twins are not the same model): "
              + "; ".join(mismatched))
    print_setups(workloads, choices, results, other)


if __name__ == "__main__":
    main()
