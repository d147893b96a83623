#!/usr/bin/env python3
"""Fingerprints of `transformer train`: shows that a refactor of the training code changed no
behaviour.

It runs a fixed list of small training runs (a few seconds each at most, one thread, tiny
models) in a fresh temporary folder and prints one line per file each run writes,

    RUN FILE SHA256

with the timings inside the files masked (the rules are below), then a final digest of all
lines. The runs cover every task, tokenizer, schedule and optimizer, the model and training
flags, --init, --resume (after --steps, across an epoch of text, and after a SIGTERM part way
through a cosine schedule), --minutes, and the recipe for real text. Every run reads only
files this script writes, and is the same bits on every run of the same binary.

Before a refactor, build and keep the old binary, then after it compare:

    cp build/bin/transformer /tmp/transformer-before       # before the refactor
    python3 scripts/run_fingerprints.py --binary /tmp/transformer-before > before.txt
    ... refactor, rebuild ...
    python3 scripts/run_fingerprints.py --binary build/bin/transformer > after.txt
    python3 scripts/run_fingerprints.py --compare before.txt after.txt

or, in one invocation that alternates the two binaries run by run:

    python3 scripts/run_fingerprints.py --binary /tmp/transformer-before \\
        --against build/bin/transformer

--compare and --against print the lines that differ and exit 1 on any difference (0: the same
behaviour). --only NAME... runs some of the runs (--list names them), --out DIR also writes the
lines to DIR/fingerprints.txt (with --against: DIR/binary.txt and DIR/against.txt), and --keep
keeps the temporary folder, to look at or diff the files themselves.

--minutes: the run's step count depends on the machine's speed, so the script checks that
the --minutes run and the same command with --steps N (N as it printed) write the same bytes
(the line `RUN minutes=steps ok`), and fingerprints a --steps run whose N does not depend on
timing: with --against, the N the first binary measured, given to both; alone, --minutes-steps
(default 300), so that outputs of separate invocations compare.

Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# ---------------------------------------------------------------------------------------------
# Masking rules: what in a run's output is time, not behaviour. Everything else is hashed as
# it is.
# ---------------------------------------------------------------------------------------------

# The training state (NAME.train-state.safetensors) keeps the page's history in its metadata
# key "history.page", a JSON object whose "training_seconds" and "checking_seconds" are the
# wall-clock seconds spent training and checking: both are set to 0 before hashing.
STATE_PAGE_KEY = "history.page"
STATE_TIMING_FIELDS = ("training_seconds", "checking_seconds")

# The run's page (NAME.html) inlines a "timings" table of rows ["LABEL","VALUE"]: seconds of
# training ("0.3 s", "2 min 5 s"), milliseconds per step, target tokens and sequences per
# second, and the seconds of "checks and snapshots". Each row keeps its label; its value
# becomes "#".
HTML_MASKS = [
    (
        re.compile(
            r'\["(training|per step|target tokens per second|sequences per second'
            r'|checks and snapshots)","[^"]*"\]'
        ),
        r'["\1","#"]',
    ),
]

# stdout and stderr: speeds, elapsed times and a size that depends on timings.
TEXT_MASKS = [
    # Speeds: "133524 target tokens/s", "43287 tok/s", "19075 sequences/s", "425 sentence
    # pairs/s" (progress lines and the final line of a run).
    (re.compile(r"\b\d+(?:\.\d+)? ([A-Za-z][A-Za-z ]*?)/s\b"), r"# \1/s"),
    # Elapsed seconds at the end of each progress line: "1/60 loss 3.3818 ... (0.0s)".
    (re.compile(r"\(\d+(?:\.\d+)?s\)"), "(#s)"),
    # The run's length: "60 steps in 0.1s: final loss ...".
    (re.compile(r"steps in \d+(?:\.\d+)?s"), "steps in #s"),
    # The tokenizer's learning time: "bpe tokenizer of 601 tokens (learned in 0.05s)".
    (re.compile(r"learned in \d+(?:\.\d+)?s"), "learned in #s"),
    # The page's size, "(the run's page, 73 kB: ...)": its timings table changes its length.
    (re.compile(r"\b\d+(?:\.\d+)? kB\b"), "# kB"),
]

# ---------------------------------------------------------------------------------------------
# The runs
# ---------------------------------------------------------------------------------------------

SMALL = ["--d-model", "32", "--d-ff", "64", "--heads", "2", "--layers", "1", "--threads", "1"]
# Generated tasks: short sequences, small batches, few decodes for the checks and the page.
GEN = SMALL + ["--batch", "16", "--length", "6", "--eval-count", "20", "--warmup", "20"]
# Text tasks on the small made-up corpus (data/small-*.tsv, fewer words than the recipe needs).
TEXT = SMALL + ["--batch-tokens", "300", "--eval-count", "8", "--warmup", "5"]
SMALL_TRAIN, SMALL_DEV = "../data/small-train.tsv", "../data/small-dev.tsv"
REAL_TRAIN, REAL_DEV = "../data/real-train.tsv", "../data/real-dev.tsv"
IDS = "../data/pairs.tsv"

LOSSES = ["--log-losses", "losses.tsv"]
SAVE = ["--save", "model.safetensors"]
MINUTES = "0.01"  # 0.6 s of training: about 1,200 steps of GEN on one core of a laptop
MINUTES_STEPS = 300  # default N of the fingerprinted --steps run, without --against


@dataclasses.dataclass
class Command:
    """One `transformer train`, run in the run's own folder (its first argument is a label)."""

    label: str
    args: list[str]
    stop_at: int = 0  # > 0: SIGTERM once stderr shows this step; then it must stop before
    stop_before: int = 0  # this step (the next snapshot), or the resumed run would differ
    hash_stderr: bool = True  # False where stderr shows timing (the step a SIGTERM hit)


@dataclasses.dataclass
class Run:
    name: str
    what: str  # what the run covers, for --list
    commands: list[Command]
    minutes: bool = False  # the one command has --minutes: see run_minutes
    uninterrupted: list[str] | None = None  # the same run without its stop, to compare with


def train(label: str, *args: str | list[str], **kw) -> Command:
    flat: list[str] = []
    for a in args:
        flat.extend([a] if isinstance(a, str) else a)
    return Command(label, flat, **kw)


REVERSE_COSINE = GEN + ["--task", "reverse", "--schedule", "cosine", "--steps", "400"]
REVERSE_COSINE += ["--snapshots", "2"] + LOSSES + SAVE  # snapshots at steps 0, 200 and 400
# A resumed run takes its data, optimizer and schedule from the training state, but not the
# flags below, which must be given again to continue as the first part would have.
RESUME_GEN = ["--threads", "1", "--eval-count", "20", "--snapshots", "3"] + LOSSES
RESUME_TEXT = ["--threads", "1", "--eval-count", "8", "--snapshots", "3"] + LOSSES

RUNS = [
    Run("copy-noam", "copy task, noam schedule, adam, --eval-every, --log-losses", [
        train("train", GEN, "--task", "copy", "--steps", "60", "--eval-every", "20",
              "--snapshots", "3", LOSSES, SAVE)]),
    Run("reverse-sgd-constant", "reverse task, sgd, constant rate, --min-length, no snapshots", [
        train("train", GEN, "--task", "reverse", "--optimizer", "sgd", "--schedule", "constant",
              "--lr", "0.05", "--min-length", "3", "--steps", "60", "--snapshots", "0", SAVE)]),
    Run("copy-cosine-dropout", "cosine schedule, dropout, label smoothing 0.2, --clip", [
        train("train", GEN, "--task", "copy", "--schedule", "cosine", "--dropout", "0.1",
              "--label-smoothing", "0.2", "--clip", "1", "--steps", "60", "--snapshots", "3",
              LOSSES, SAVE)]),
    Run("copy-shape", "--norm-first, --positions learned, --no-tied, --max-len, --seed", [
        train("train", GEN, "--task", "copy", "--norm-first", "--positions", "learned",
              "--no-tied", "--max-len", "16", "--seed", "7", "--steps", "60", "--snapshots",
              "3", LOSSES, SAVE)]),
    Run("copy-init", "--init from an earlier run's checkpoint, with dropout", [
        train("base", GEN, "--task", "copy", "--steps", "30", "--snapshots", "2",
              "--save", "base.safetensors"),
        train("init", GEN, "--task", "copy", "--init", "base.safetensors", "--dropout", "0.1",
              "--steps", "30", "--snapshots", "3", LOSSES, SAVE)]),
    Run("pairs", "--pairs: an id file the script writes, --vocab-size, --eval-every", [
        train("train", SMALL, "--pairs", IDS, "--vocab-size", "16", "--batch", "8",
              "--warmup", "10", "--eval-count", "10", "--steps", "40", "--eval-every", "20",
              "--snapshots", "3", LOSSES, SAVE)]),
    Run("translate-word-dev", "translate --data --dev, word tokenizer, checks, --average, "
        "--save-every", [
        train("train", TEXT, "--task", "translate", "--data", SMALL_TRAIN, "--dev", SMALL_DEV,
              "--tokenizer", "word", "--steps", "30", "--eval-every", "10", "--average", "3",
              "--save-every", "10", "--snapshots", "3", LOSSES, SAVE)]),
    Run("translate-bpe", "translate --data without --dev, bpe tokenizer, --vocab-size", [
        train("train", TEXT, "--task", "translate", "--data", SMALL_TRAIN, "--tokenizer", "bpe",
              "--vocab-size", "320", "--steps", "20", "--snapshots", "3", LOSSES, SAVE)]),
    Run("toy-translation-char", "the generated toy language, char tokenizer, compositional", [
        train("train", TEXT, "--task", "toy-translation", "--split", "compositional",
              "--tokenizer", "char", "--steps", "20", "--snapshots", "2", LOSSES, SAVE)]),
    Run("copy-resume", "a generated task run to --steps 30, then --resume to 60", [
        train("part1", GEN, "--task", "copy", "--steps", "30", "--save-every", "10",
              "--snapshots", "3", LOSSES, SAVE),
        train("part2", "--resume", "model.safetensors", "--steps", "60", RESUME_GEN)]),
    Run("translate-resume-epoch", "text run to --steps 6 (mid-epoch), then --resume to 20, "
        "past the end of its first epoch", [
        train("part1", TEXT, "--task", "translate", "--data", SMALL_TRAIN, "--tokenizer",
              "word", "--steps", "6", "--snapshots", "3", LOSSES, SAVE),
        train("part2", "--resume", "model.safetensors", "--steps", "20", RESUME_TEXT)]),
    Run("reverse-cosine-stopped", "cosine over 400 steps stopped by SIGTERM near step 40, "
        "then --resume --steps 400 (the planned length)", [
        train("part1", REVERSE_COSINE, stop_at=40, stop_before=200, hash_stderr=False),
        train("part2", "--resume", "model.safetensors", "--steps", "400", "--threads", "1",
              "--eval-count", "20", "--snapshots", "2", LOSSES, hash_stderr=False)],
        uninterrupted=REVERSE_COSINE),
    Run("copy-minutes", f"--minutes {MINUTES}, then --steps N as it printed", [
        train("train", GEN, "--task", "copy", "--minutes", MINUTES, "--snapshots", "3",
              LOSSES, SAVE)], minutes=True),
    Run("real-text-recipe", "translate on 1500 made-up pairs of 4166 distinct words: the "
        "recipe's own model and settings, no --dev", [
        train("train", "--task", "translate", "--data", REAL_TRAIN, "--threads", "1",
              "--steps", "3", "--eval-count", "8", "--snapshots", "2", LOSSES, SAVE)]),
    Run("real-text-recipe-dev", "the same corpus with --dev: the recipe around a small model, "
        "its checks and average", [
        train("train", SMALL, "--task", "translate", "--data", REAL_TRAIN, "--dev", REAL_DEV,
              "--steps", "6", "--eval-count", "8", "--snapshots", "2", LOSSES, SAVE)]),
]

# ---------------------------------------------------------------------------------------------
# Data: made-up words from a seeded generator of our own, the same bytes on any Python.
# ---------------------------------------------------------------------------------------------


class SplitMix64:
    MASK = (1 << 64) - 1

    def __init__(self, seed: int):
        self.state = seed & self.MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n


def made_up_words(rng: SplitMix64, count: int, syllables: tuple[int, int]) -> list[str]:
    onsets, vowels = "bdfgklmnprstvz", "aeiou"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < count:
        n = syllables[0] + rng.below(syllables[1] - syllables[0] + 1)
        word = "".join(onsets[rng.below(14)] + vowels[rng.below(5)] for _ in range(n))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def parallel_corpus(seed: int, vocab: int, pairs: int) -> list[str]:
    """Lines SOURCE<TAB>TARGET: 3 to 7 source words, the target their words in reverse order,
    each word always the same target word; frequent words often, rare words sometimes."""
    rng = SplitMix64(seed)
    source = made_up_words(rng, vocab, (2, 4))
    target = [w + "n" for w in made_up_words(rng, vocab, (1, 3))]
    lines = []
    for _ in range(pairs):
        ids = [min(rng.below(vocab), rng.below(vocab)) for _ in range(3 + rng.below(5))]
        src = " ".join(source[i] for i in ids)
        tgt = " ".join(target[i] for i in reversed(ids))
        lines.append(f"{src}\t{tgt}")
    return lines


def id_pairs(seed: int, pairs: int) -> list[str]:
    """Lines SRC_IDS<TAB>TGT_IDS of ids 4 to 15: the target is the source sorted, after bos."""
    rng = SplitMix64(seed)
    lines = []
    for _ in range(pairs):
        src = [4 + rng.below(12) for _ in range(2 + rng.below(5))]
        tgt = [1] + sorted(src) + [2]
        lines.append(" ".join(map(str, src + [2])) + "\t" + " ".join(map(str, tgt)))
    return lines


def distinct_words(lines: list[str]) -> int:
    return len({w for line in lines for w in line.replace("\t", " ").split()})


def write_data(folder: Path) -> None:
    folder.mkdir(parents=True)
    small = parallel_corpus(seed=1, vocab=40, pairs=240)
    real = parallel_corpus(seed=2, vocab=2500, pairs=1520)
    assert distinct_words(small) < 2000 <= distinct_words(real[:1500]), "recipe threshold"
    files = {
        "small-train.tsv": small[:200], "small-dev.tsv": small[200:],
        "real-train.tsv": real[:1500], "real-dev.tsv": real[1500:],
        "pairs.tsv": id_pairs(seed=3, pairs=64),
    }
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Hashing, with the masks
# ---------------------------------------------------------------------------------------------


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mask_text(text: str, masks=TEXT_MASKS) -> str:
    for pattern, replacement in masks:
        text = pattern.sub(replacement, text)
    return text


def masked_safetensors(data: bytes) -> bytes:
    """The file with its header's metadata timings set to 0: the header (re-serialised) then
    the tensor bytes. A file without the key is returned as it is."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    metadata = header.get("__metadata__", {})
    if STATE_PAGE_KEY not in metadata:
        return data
    page = json.loads(metadata[STATE_PAGE_KEY])
    for field in STATE_TIMING_FIELDS:
        if field in page:
            page[field] = 0
    metadata[STATE_PAGE_KEY] = json.dumps(page, separators=(",", ":"), ensure_ascii=False)
    masked = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return masked + data[8 + length:]


def file_fingerprint(path: Path) -> str:
    data = path.read_bytes()
    if path.name.endswith(".train-state.safetensors"):
        return sha256(masked_safetensors(data))
    if path.suffix == ".html":
        return sha256(mask_text(data.decode("utf-8"), HTML_MASKS).encode("utf-8"))
    return sha256(data)


def folder_fingerprints(folder: Path) -> dict[str, str]:
    return {p.name: file_fingerprint(p) for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    """What one command did: its exit status and (masked) output."""

    code: int
    stdout: str
    stderr: str


def run_train(binary: Path, args: list[str], cwd: Path) -> Result:
    done = subprocess.run([str(binary), "train", *args], cwd=cwd, capture_output=True,
                          text=True, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def run_stopped(binary: Path, command: Command, cwd: Path) -> Result:
    """Sends SIGTERM once a progress line on stderr reaches command.stop_at; the run stops
    after its current step and saves. Checks it stopped before command.stop_before."""
    progress = re.compile(r"^(\d+)/\d+ ")
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen([str(binary), "train", *command.args], cwd=cwd, stdout=out,
                                   stderr=subprocess.PIPE, text=True)
        lines = []
        for line in process.stderr:
            lines.append(line)
            step = progress.match(line)
            if step and int(step[1]) >= command.stop_at and process.returncode is None:
                process.send_signal(signal.SIGTERM)
        code = process.wait()
        out.seek(0)
        result = Result(code, out.read(), "".join(lines))
    stopped = re.search(r"stopped by SIGTERM after step (\d+)", result.stderr)
    if code != 128 + signal.SIGTERM or not stopped or int(stopped[1]) >= command.stop_before:
        sys.exit(f"{command.label}: expected a stop by SIGTERM before step "
                 f"{command.stop_before}, got exit status {code}:\n{result.stderr[-2000:]}")
    return result


def command_lines(command: Command, result: Result) -> dict[str, str]:
    lines = {f"{command.label}.exit": str(result.code),
             f"{command.label}.stdout": sha256(mask_text(result.stdout).encode())}
    if command.hash_stderr:
        lines[f"{command.label}.stderr"] = sha256(mask_text(result.stderr).encode())
    return lines


def run_commands(binary: Path, commands: list[Command], folder: Path) -> dict[str, str]:
    """Runs the commands in a new folder; the fingerprints of their output and of its files."""
    folder.mkdir(parents=True)
    lines: dict[str, str] = {}
    for command in commands:
        if command.stop_at:
            result = run_stopped(binary, command, folder)
            lines[f"{command.label}.exit"] = str(result.code)
        else:
            result = run_train(binary, command.args, folder)
            lines.update(command_lines(command, result))
    lines.update(folder_fingerprints(folder))
    return lines


def with_steps(args: list[str], steps: int) -> list[str]:
    """The arguments with --minutes M replaced by --steps N."""
    i = args.index("--minutes")
    return args[:i] + ["--steps", str(steps)] + args[i + 2:]


def measured_steps(stderr: str) -> int | None:
    found = re.search(r"--steps (\d+) repeats this run exactly", stderr)
    return int(found[1]) if found else None


def same_files(a: dict[str, str], b: dict[str, str]) -> str:
    """"ok" when two runs' fingerprints (files, exit status, stdout) agree, else what differs."""
    keys = [k for k in sorted(a.keys() | b.keys()) if not k.endswith(".stderr")]
    differ = [k for k in keys if a.get(k) != b.get(k)]
    return "ok" if not differ else "differs:" + ",".join(differ)


class Runner:
    """Runs the runs of one binary in its own folder."""

    def __init__(self, binary: Path, folder: Path, minutes_steps: int | None):
        self.binary = binary
        self.folder = folder
        self.minutes_steps = minutes_steps  # None: the N this binary's --minutes run measures
        self.last_measured: int | None = None  # the N its last --minutes run printed

    def run(self, run: Run) -> dict[str, str]:
        if run.minutes:
            return self.run_minutes(run)
        lines = run_commands(self.binary, run.commands, self.folder / run.name)
        if run.uninterrupted:
            lines.update(self.compare_uninterrupted(run, lines))
        return lines

    def compare_uninterrupted(self, run: Run, lines: dict[str, str]) -> dict[str, str]:
        """Each file of the stopped and resumed run beside the same file of one run straight
        through: "same" or "differs" (the resume is meant to be exact)."""
        whole = run_commands(self.binary, [Command("whole", run.uninterrupted)],
                             self.folder / (run.name + ".whole"))
        files = [k for k in whole if "." in k and not k.startswith("whole.")]
        return {f"=uninterrupted:{name}": "same" if whole[name] == lines.get(name) else "differs"
                for name in files}

    def run_minutes(self, run: Run) -> dict[str, str]:
        """--minutes, then --steps N as it printed: the same bytes? Then the fingerprints of a
        --steps run of an N that does not depend on this machine's speed."""
        (command,) = run.commands
        timed_folder = self.folder / (run.name + ".minutes")
        timed_folder.mkdir(parents=True)
        timed = run_train(self.binary, command.args, timed_folder)
        steps = self.last_measured = measured_steps(timed.stderr)
        if timed.code != 0 or steps is None:
            sys.exit(f"{run.name}: no step count on stderr (exit status {timed.code}):\n"
                     f"{timed.stderr[-2000:]}")
        timed_lines = command_lines(Command("train", command.args, hash_stderr=False), timed)
        timed_lines.update(folder_fingerprints(timed_folder))
        repeat = run_commands(self.binary, [Command("train", with_steps(command.args, steps))],
                              self.folder / (run.name + ".steps"))
        lines = {"minutes=steps": same_files(timed_lines, repeat)}
        chosen = self.minutes_steps if self.minutes_steps is not None else steps
        if chosen != steps:
            repeat = run_commands(self.binary,
                                  [Command("train", with_steps(command.args, chosen))],
                                  self.folder / run.name)
        lines["steps"] = str(chosen)
        lines.update(repeat)
        return lines


# ---------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------


def report(results: dict[str, dict[str, str]]) -> list[str]:
    """One line "RUN FILE SHA256" per fingerprint, then the digest of them all."""
    lines = [f"{run} {key} {value}" for run, keys in results.items()
             for key, value in sorted(keys.items())]
    return lines + [f"digest {sha256(chr(10).join(lines).encode())}"]


def parse_report(lines: list[str]) -> dict[str, str]:
    """Lines "RUN FILE SHA256" as {"RUN FILE": SHA256}, without the digest."""
    entries = {}
    for line in lines:
        run, key, value = (line.split(" ", 2) + ["", ""])[:3]
        if run != "digest":
            entries[f"{run} {key}"] = value
    return entries


def differences(a: dict[str, str], b: dict[str, str], names: tuple[str, str]) -> list[str]:
    """The lines of a and b that differ, each as "RUN FILE: A | B"."""
    out = []
    for key in sorted(a.keys() | b.keys()):
        if a.get(key) != b.get(key):
            out.append(f"{key}: {names[0]} {a.get(key, '(none)')} | "
                       f"{names[1]} {b.get(key, '(none)')}")
    return out


def print_differences(diff: list[str], count: int) -> int:
    for line in diff:
        print(line)
    if diff:
        print(f"{len(diff)} of {count} fingerprints differ", file=sys.stderr)
        return 1
    print(f"all {count} fingerprints are the same", file=sys.stderr)
    return 0


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python3 scripts/run_fingerprints.py --binary /tmp/transformer-before "
               "--against build/bin/transformer",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, default=Path("build/bin/transformer"),
                        help="the transformer binary to fingerprint (default: %(default)s)")
    parser.add_argument("--against", type=Path,
                        help="a second binary, run after the first run by run; prints only "
                             "the differences and exits 1 on any")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"),
                        help="compare two saved outputs of this script instead of running")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these runs")
    parser.add_argument("--list", action="store_true", help="list the runs and exit")
    parser.add_argument("--out", type=Path, help="also write the lines to this folder")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder and print where it is")
    parser.add_argument("--minutes-steps", type=int, default=MINUTES_STEPS,
                        help="N of the fingerprinted --steps run beside --minutes, without "
                             "--against (default: %(default)s)")
    return parser.parse_args()


def chosen_runs(only: list[str] | None) -> list[Run]:
    if not only:
        return RUNS
    names = {run.name for run in RUNS}
    unknown = [name for name in only if name not in names]
    if unknown:
        sys.exit(f"--only: no run named {', '.join(unknown)} (--list names them)")
    return [run for run in RUNS if run.name in only]


def main() -> int:
    args = parse_arguments()
    if args.list:
        for run in RUNS:
            print(f"{run.name:24} {run.what}")
        return 0
    if args.compare:
        before, after = (parse_report(path.read_text(encoding="utf-8").splitlines())
                         for path in args.compare)
        names = tuple(str(path) for path in args.compare)
        return print_differences(differences(before, after, names),
                                 len(before.keys() | after.keys()))

    binaries = {"binary": args.binary.resolve()}
    if args.against:
        binaries["against"] = args.against.resolve()
    for label, binary in binaries.items():
        if not os.access(binary, os.X_OK):
            sys.exit(f"--{label}: {binary} is not an executable file")
    runs = chosen_runs(args.only)

    root = Path(tempfile.mkdtemp(prefix="fingerprints-"))
    runners = {}
    for label, binary in binaries.items():
        # The runs read "../data/...": each binary's runs are folders beside its own data.
        write_data(root / label / "data")
        runners[label] = Runner(binary, root / label,
                                None if args.against else args.minutes_steps)
    results: dict[str, dict[str, dict[str, str]]] = {label: {} for label in binaries}
    started = time.monotonic()
    try:
        for number, run in enumerate(runs, 1):
            print(f"[{number}/{len(runs)}] {run.name}", file=sys.stderr, flush=True)
            for label, runner in runners.items():
                if label == "against" and run.minutes:
                    runner.minutes_steps = runners["binary"].last_measured
                results[label][run.name] = runner.run(run)
    finally:
        if args.keep:
            print(f"the runs' folders: {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{len(runs)} runs in {time.monotonic() - started:.0f} s", file=sys.stderr)

    reports = {label: report(result) for label, result in results.items()}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        names = {"binary": "fingerprints.txt"} if not args.against else \
            {"binary": "binary.txt", "against": "against.txt"}
        for label, lines in reports.items():
            (args.out / names[label]).write_text("\n".join(lines) + "\n", encoding="utf-8")
    if not args.against:
        print("\n".join(reports["binary"]))
        return 0
    before, after = (parse_report(reports[label]) for label in ("binary", "against"))
    return print_differences(differences(before, after, ("binary", "against")),
                             len(before.keys() | after.keys()))


if __name__ == "__main__":
    sys.exit(main())
