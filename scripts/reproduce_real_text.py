#!/usr/bin/env python3
"""Reruns the real-text runs of README.md ("Real sentences: German and Chinese") and checks
every number the README states about them.

    python3 scripts/corpus.py de zh_CN                   # the corpus, once (docs/corpus.md)
    python3 scripts/reproduce_real_text.py                # all three: about half an hour, 2 cores
    python3 scripts/reproduce_real_text.py --only zh_CN   # one of de, zh_CN, zh-en
    python3 scripts/reproduce_real_text.py --quick        # 40 steps each, nothing compared

The README's runs train with `--minutes`, which times a few steps and turns the budget into a
step count N; the run is then the one `--steps N` gives, bit for bit. This script reads each
run's N from the README and trains with the README's command, `--steps N` in place of
`--minutes`:

    transformer train --task translate --data D/train.tsv --dev D/dev.tsv --steps N --save OUT/NAME.safetensors
    transformer eval --ckpt OUT/NAME.safetensors --data D/test.tsv --beam 4 --hypotheses OUT/NAME.test.txt

where D is out/de, out/zh_CN or out/zh-en (the Chinese corpus with its columns swapped, made
here as the README's awk command makes it when it does not exist yet). From what they print,
and from the translations, it takes the numbers the README states: the recipe line, the model's
size, the dev scores the train command prints, the test scores of `eval`, the messages
translated exactly as their reference, and the example translations. It also counts the test
messages of four or more English words that have a near copy in training (one word away:
scripts/near_duplicates.py defines it exactly) and scores those with and without one apart
(`eval --beam 4` on OUT/NAME/test.near.tsv and OUT/NAME/test.far.tsv).

Then it prints one line per number: the README's value, the reproduced one and the verdict,

    de     test BLEU                                  README     23.73   reproduced     23.73   exact

and exits with 0 when every number matches, 1 when one does not (2: it could not run).

What "matches" means. With the same seed, a run gives the same bits whatever the number of
threads, but only on the vector unit the binary was compiled for (README: "Building by hand"):
AVX-512, AVX2 and NEON round some sums differently, and in a training run of thousands of steps
that difference in the last bit grows into a different run, much as another seed would. So:

  - exact (the default on an x86-64 CPU with AVX-512, the README's): every number must be the
    README's to its printed digits;
  - tolerant (the default elsewhere, or --tolerant: for a binary built for another vector unit,
    such as -DGRADFORMER_NATIVE=OFF): scores must lie within TOLERANCE below of the README's;
    numbers that no float rounding changes (the corpus, the recipe, the model's size, the
    near-copy counts) must still be exact, and those a different run simply changes (the step
    whose check was best, which weights the checkpoint keeps, the example translations) are
    shown but not judged. The widths, ±5 points for a score, ±0.06 for the brevity penalty and
    the length ratio, ±6% for a length or a count of exact translations, are about twice the
    spread between seeds measured on the English-Chinese run (see TOLERANCE; --seed reruns
    with another seed).

Not checked: the timings (seconds a step, pairs a second, "674 s of training"), which depend on
the machine, and the numbers of runs that are not the README's commands (the default model's
test BLEU before the recipe, the bigger model's dev BLEU).

Options: --only NAME... (de, zh_CN, zh-en), --binary (default build/bin/transformer), --data
(the corpus folders' parent, default out/), --out (checkpoints, logs, translations and the
split test files, default out/reproduce/), --threads (passed on; the bits are the same for any
count), --reuse (take a finished train or eval from its log in --out when the command was the
same, instead of running it again), --quick [STEPS] (a smoke test: each run for 40 steps, or
STEPS, and nothing compared), --readme (default README.md), --exact or --tolerant (instead of
the choice by the CPU), --seed N (train with another seed: how the tolerances were measured).
The runs print their progress as they go. Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import near_duplicates  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
QUICK_STEPS = 40

# The README's runs, in the order they run here (the short ones first); CORPUS is each one's
# folder under --data (zh-en is made from zh_CN), ENGLISH_COLUMN the column of its English.
RUN_NAMES = ("zh_CN", "zh-en", "de")
CORPUS = {"de": "de", "zh_CN": "zh_CN", "zh-en": "zh-en"}
ENGLISH_COLUMN = {"de": 0, "zh_CN": 0, "zh-en": 1}

# Tolerances for a rerun on another vector unit, by kind of number. Such a rerun is another
# run altogether, so the right width is the spread between runs that differ only by chance.
# Measured with --seed on the English-Chinese run, seeds 1, 2 and 3: test BLEU 28.41, 27.35 and
# 26.66, chrF2 25.02, 24.05 and 23.26. Over every kind of number the README states, taken from
# this run (the dev and test scores and their parts, the checks on 100 dev pairs, the scores
# with and without a near copy), a score moved by up to 2.8 points (chrF2 on the test messages
# with a near copy: 36.26, 34.39, 33.49), a brevity penalty or length ratio by up to 0.029
# (dev), a hypothesis length by up to 2.8% (dev). With so few runs the largest difference
# underestimates the range, so the widths are about twice those:
#   score:  BLEU, chrF and their parts (n-gram precisions, chrF precision and recall), points
#   ratio:  BLEU's brevity penalty and length ratio
#   length: hypothesis lengths and counts of exact translations, relative
TOLERANCE = {"score": 5.0, "ratio": 0.06, "length": 0.06}
# Kinds that no float rounding changes, compared exactly in both modes, and kinds that are
# only shown in tolerant mode (a different run has other ones).
FIXED_KINDS = ("fixed",)
UNJUDGED_KINDS = ("step", "text")


# ---------------------------------------------------------------------------------------------
# What the README states
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Claim:
    """One number (or text) the README states about a run, as it is printed there."""

    run: str
    key: str  # the name of the measured value it is compared with
    label: str  # what the output line calls it
    value: str
    kind: str  # score, ratio, length (see TOLERANCE), fixed, step, text, or input (not compared)


class ReadmeError(ValueError):
    """The README no longer says something in the words this script looks for."""


NUM = r"\d+(?:\.\d+)?"  # a number as the README and the program print it
BLEU_LINE = (rf"BLEU = (?P<bleu>{NUM}) (?P<p1>{NUM})/(?P<p2>{NUM})/(?P<p3>{NUM})/"
             rf"(?P<p4>{NUM}) \(BP = (?P<bp>{NUM}) ratio = (?P<ratio>{NUM}) hyp_len = "
             r"(?P<hyp_len>\d+) ref_len = (?P<ref_len>\d+)\) (?P<tok>tok:\w+)")
CHRF2_LINE = (rf"chrF2 = (?P<chrf>{NUM}) \(precision (?P<chrf_p>{NUM}), recall "
              rf"(?P<chrf_r>{NUM})\)")
# The parts of a BLEU line and of a chrF2 line: key suffix, label, kind.
BLEU_PARTS = [("bleu", "BLEU", "score"), ("p1", "BLEU 1-gram precision", "score"),
              ("p2", "BLEU 2-gram precision", "score"), ("p3", "BLEU 3-gram precision", "score"),
              ("p4", "BLEU 4-gram precision", "score"), ("bp", "BLEU brevity penalty", "ratio"),
              ("ratio", "BLEU length ratio", "ratio"), ("hyp_len", "BLEU hypothesis length",
                                                          "length"),
              ("ref_len", "BLEU reference length", "fixed"), ("tok", "BLEU tokenizer", "fixed")]
CHRF_PARTS = [("chrf", "chrF2", "score"), ("chrf_p", "chrF2 precision", "score"),
              ("chrf_r", "chrF2 recall", "score")]


def unwrapped(prose: str) -> str:
    """Prose with each paragraph on one line (it wraps anywhere, even inside `code`), and each
    table row on a line of its own."""
    out = []
    for line in prose.split("\n"):
        if line.startswith("|"):
            out.append("\n" + line.strip() + "\n")
        elif not line.strip():
            out.append("\n")
        else:
            out.append(" " + line.strip())
    return re.sub(" +", " ", "".join(out))


def real_text_section(readme: str) -> str:
    """The section "### Real sentences..." up to the next heading, code blocks as they are and
    the prose unwrapped."""
    start = readme.find("### Real sentences")
    if start < 0:
        raise ReadmeError('README has no section "### Real sentences"')
    end = re.search(r"^#{2,3} ", readme[start + 4:], re.M)
    text = readme[start:start + 4 + end.start()] if end else readme[start:]
    pieces = re.split(r"(^```.*?^```)", text, flags=re.S | re.M)
    return "".join(p if p.startswith("```") else unwrapped(p) for p in pieces)


def find(pattern: str, text: str, what: str) -> re.Match:
    found = re.search(pattern, text, re.M)
    if not found:
        raise ReadmeError(f"README's real-text section no longer states {what} "
                          f"(pattern {pattern!r})")
    return found


def claims_of_lines(run: str, prefix: str, what: str, found: re.Match,
                    parts: list[tuple[str, str, str]]) -> list[Claim]:
    return [Claim(run, f"{prefix}.{key}", f"{what} {label}", found.group(key), kind)
            for key, label, kind in parts]


def test_block(run: str, corpus: str, section: str) -> list[Claim]:
    """The three lines `eval` prints for a test set, as the README shows them."""
    found = find(rf"(?P<pairs>\d+) pairs from out/{re.escape(corpus)}/test\.tsv, beam 4, "
                 rf"length penalty 0\.6\n{BLEU_LINE}\n{CHRF2_LINE}", section,
                 f"the {corpus} test scores")
    return ([Claim(run, "test.pairs", "test pairs", found.group("pairs"), "fixed")]
            + claims_of_lines(run, "test", "test", found, BLEU_PARTS + CHRF_PARTS))


def german_claims(section: str) -> list[Claim]:
    c = []
    run = "de"
    steps = find(rf"--minutes 10: {NUM} s a step \(\d+ steps timed\), so (\d+) steps", section,
                 "the German run's step count")
    c.append(Claim(run, "steps", "steps", steps.group(1), "input"))
    recipe = find(r"^(recipe for \d+ pairs .*)$", section, "the German recipe line")
    c.append(Claim(run, "recipe", "recipe line", recipe.group(1), "fixed"))
    size = find(rf"The model is small \(({NUM}) million parameters\)", section, "the model's size")
    c.append(Claim(run, "parameters_millions", "parameters, millions", size.group(1), "fixed"))
    epochs = find(r"go through the corpus (\d+) times", section, "the number of epochs")
    c.append(Claim(run, "epochs", "times through the corpus", epochs.group(1), "fixed"))
    reaches = find(rf"where this model reaches ({NUM})", section, "the dev BLEU in the prose")
    c.append(Claim(run, "dev.bleu", "dev BLEU (prose)", reaches.group(1), "score"))
    checks = find(r"BLEU on 100 dev pairs \(greedy\): the last step's weights \((?P<last_step>\d+)"
                  rf"\) (?P<last>{NUM}), the best check's weights \(step (?P<best_step>\d+)\) "
                  rf"(?P<best>{NUM}), the average of the last 5 checkpoints (?P<average>{NUM})",
                  section, "the BLEU of the three candidate weights")
    c += claims_of_lines(run, "dev100", "dev 100 pairs,", checks, [
        ("last_step", "last step", "fixed"), ("last", "last step's BLEU", "score"),
        ("best_step", "best check's step", "step"), ("best", "best check's BLEU", "score"),
        ("average", "average's BLEU", "score")])
    holds = find(r"^the checkpoint holds (.*)$", section, "which weights the checkpoint holds")
    c.append(Claim(run, "checkpoint", "checkpoint holds", holds.group(1), "text"))
    dev = find(BLEU_LINE + rf" on (?P<pairs>\d+) dev pairs \(greedy\), chrF = (?P<chrf>{NUM})",
               section, "the German dev scores")
    c.append(Claim(run, "dev.pairs", "dev pairs", dev.group("pairs"), "fixed"))
    c += claims_of_lines(run, "dev", "dev", dev, BLEU_PARTS + [("chrf", "chrF", "score")])
    c += test_block(run, "de", section)
    exact = find(r"Now (?P<exact>\d+) of the (?P<total>[\d,]+) test messages \((?P<percent>\d+)%\) "
                 r"come out exactly as their reference, (?P<short>\d+) of the (?P<short_total>\d+)"
                 r" of up to three words", section, "the exact translations")
    c += claims_of_lines(run, "exact", "test", exact, [
        ("exact", "translated exactly as the reference", "length"),
        ("total", "messages", "fixed"), ("percent", "% translated exactly", "score"),
        ("short", "of up to 3 words translated exactly", "length"),
        ("short_total", "messages of up to 3 words", "fixed")])
    for source, target in re.findall(r"`([^`]+)` gives `([^`]+)`", section):
        c.append(Claim(run, f"example:{source}", f"translation of '{source}'", target, "text"))
    return c


def chinese_claims(section: str) -> list[Claim]:
    run = "zh_CN"
    steps = find(r"\(`--minutes 4`: (\d+) steps", section, "the Chinese run's step count")
    c = [Claim(run, "steps", "steps", steps.group(1), "input")]
    c += test_block(run, "zh_CN", section)
    for source, target in re.findall(r"held-out `([^`]+)` becomes `([^`]+)`", section):
        c.append(Claim(run, f"example:{source}", f"translation of '{source}'", target, "text"))
    return c


def chinese_english_claims(section: str) -> list[Claim]:
    run = "zh-en"
    found = find(rf"4 minutes \((\d+) steps\) reach test BLEU ({NUM}) and chrF ({NUM})", section,
                 "the Chinese-to-English run")
    return [Claim(run, "steps", "steps", found.group(1), "input"),
            Claim(run, "test.bleu", "test BLEU", found.group(2), "score"),
            Claim(run, "test.chrf", "test chrF2", found.group(3), "score")]


# The README's table of near copies: one row per run, named by its first cell.
NEAR_ROW_NAMES = {"de": "English to German", "zh_CN": "English to Chinese",
                  "zh-en": "Chinese to English"}


def score_cell(name: str) -> str:
    """A "BLEU / chrF" cell of the table, as groups NAME_bleu and NAME_chrf."""
    return rf"(?P<{name}_bleu>{NUM}) / (?P<{name}_chrf>{NUM})"


def near_copy_claims(section: str, run: str) -> list[Claim]:
    """The run's row of the near-copy table, when the README has one: test messages of four or
    more words, how many have a near copy (and the share), the dev share, and BLEU / chrF on
    the whole test set, on the messages with a near copy and on those without."""
    row = re.search(
        rf"^\| {re.escape(NEAR_ROW_NAMES[run])} \| (?P<long>[\d,]+) \| (?P<near>[\d,]+) "
        rf"\((?P<percent>{NUM})%\) \| (?P<dev_percent>{NUM})% \| {score_cell('all')} \| "
        rf"{score_cell('near')} \| {score_cell('far')} \|$", section, re.M)
    if not row:
        return []
    c = [Claim(run, "near.long", "test messages of 4+ words", row.group("long"), "fixed"),
         Claim(run, "near.count", "of them with a near copy", row.group("near"), "fixed"),
         Claim(run, "near.percent", "% with a near copy", row.group("percent"), "fixed"),
         Claim(run, "near.dev_percent", "% of dev with a near copy", row.group("dev_percent"),
               "fixed")]
    for part, what in [("all", "all test"), ("near", "test with a near copy"),
                       ("far", "test without a near copy")]:
        prefix = "test" if part == "all" else f"test.{part}"
        c.append(Claim(run, f"{prefix}.bleu", f"{what}: BLEU", row.group(f"{part}_bleu"), "score"))
        c.append(Claim(run, f"{prefix}.chrf", f"{what}: chrF2", row.group(f"{part}_chrf"),
                       "score"))
    return c


def readme_claims(readme: str) -> dict[str, list[Claim]]:
    """Every checked claim of the README's real-text section, by run."""
    section = real_text_section(readme)
    claims = {"de": german_claims(section), "zh_CN": chinese_claims(section),
              "zh-en": chinese_english_claims(section)}
    for run in claims:
        claims[run] += near_copy_claims(section, run)
    return claims


# ---------------------------------------------------------------------------------------------
# What the runs print
# ---------------------------------------------------------------------------------------------

def parse_train(log: str) -> dict[str, str]:
    """The numbers of a `transformer train` log (stdout and stderr together)."""
    m: dict[str, str] = {}
    if found := re.search(r"^(recipe for \d+ pairs .*)$", log, re.M):
        m["recipe"] = found.group(1)
    if found := re.search(r"^model: (\d+) parameters", log, re.M):
        m["parameters"] = found.group(1)
        m["parameters_millions"] = f"{int(found.group(1)) / 1e6:.2f}"
    pairs = re.search(r"^data: (\d+) training pairs", log, re.M)
    final = re.search(rf"^\d+ steps in ({NUM})s: .* (\d+) sentence pairs/s$", log, re.M)
    if pairs and final:  # whole passes: pairs a second times seconds is the pairs seen, to 0.1%
        m["epochs"] = str(math.floor(float(final.group(1)) * int(final.group(2))
                                     / int(pairs.group(1))))
    if found := re.search(r"^BLEU on (\d+) dev pairs \(greedy\): the last step's weights "
                          rf"\((?P<last_step>\d+)\) (?P<last>{NUM}), the best check's weights "
                          rf"\(step (?P<best_step>\d+)\) (?P<best>{NUM}), the average of the last "
                          rf"\d+ checkpoints (?P<average>{NUM})$", log, re.M):
        m.update({f"dev100.{k}": v for k, v in found.groupdict().items()})
    if found := re.search(r"^the checkpoint holds (.*)$", log, re.M):
        m["checkpoint"] = found.group(1)
    if found := re.search(r"^" + BLEU_LINE + r" on (?P<pairs>\d+) dev pairs \(greedy\), chrF = "
                          rf"(?P<chrf>{NUM})$", log, re.M):
        m.update({f"dev.{k}": v for k, v in found.groupdict().items()})
    return m


def parse_eval(log: str, prefix: str) -> dict[str, str]:
    """The numbers of a `transformer eval` log, as PREFIX.bleu, PREFIX.chrf, ..."""
    found = re.search(r"^(?P<pairs>\d+) pairs from .*\n" + BLEU_LINE + r"\n" + CHRF2_LINE, log,
                      re.M)
    return {f"{prefix}.{k}": v for k, v in found.groupdict().items()} if found else {}


def exact_translations(sources: list[str], references: list[str],
                       hypotheses: list[str]) -> dict[str, str]:
    """How many translations are their reference exactly, overall and among the messages of up
    to three (English source) words."""
    same = [h == r for h, r in zip(hypotheses, references)]
    short = [len(s.split()) <= 3 for s in sources]
    return {"exact.exact": str(sum(same)), "exact.total": f"{len(same):,}",
            "exact.percent": str(round(100 * sum(same) / len(same))) if same else "0",
            "exact.short": str(sum(s and e for s, e in zip(short, same))),
            "exact.short_total": str(sum(short))}


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Verdict:
    claim: Claim
    measured: str | None
    verdict: str  # "exact", "within ±T", "DIFFERS", "MISSING", "shown only"
    ok: bool

    def line(self) -> str:
        c = self.claim
        measured = "-" if self.measured is None else self.measured
        if c.kind == "text" or c.kind == "fixed" and len(c.value) > 20:
            return (f"{c.run:6} {c.label}: {self.verdict}\n"
                    f"         README:     {c.value}\n         reproduced: {measured}")
        return (f"{c.run:6} {c.label:42} README {c.value:>9}   reproduced {measured:>9}   "
                f"{self.verdict}")


def as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def to_printed_digits(readme: str, measured: str) -> str:
    """measured written with as many decimals as the README's number has (22.88 read against
    "22.9" is 22.9), so that a number rounded in prose is compared as it was rounded."""
    decimals = len(readme.split(".")[1]) if "." in readme else 0
    value = as_number(measured)
    if value is None or as_number(readme) is None:
        return measured
    text = f"{value:,.{decimals}f}" if "," in readme else f"{value:.{decimals}f}"
    return text


def judge(claim: Claim, measured: str | None, tolerant: bool) -> Verdict:
    if measured is None:
        return Verdict(claim, None, "MISSING: the run did not print it", False)
    shown = to_printed_digits(claim.value, measured)
    if shown == claim.value:
        return Verdict(claim, shown, "exact", True)
    if not tolerant or claim.kind in FIXED_KINDS:
        return Verdict(claim, shown, "DIFFERS", False)
    if claim.kind in UNJUDGED_KINDS:
        return Verdict(claim, shown, "differs: shown only (another vector unit, another run)",
                       True)
    readme, value = as_number(claim.value), as_number(measured)
    width = TOLERANCE[claim.kind]
    if claim.kind == "length":
        ok = abs(value - readme) <= width * readme
        return Verdict(claim, shown, f"{'within' if ok else 'DIFFERS by more than'} "
                                     f"±{100 * width:.0f}%", ok)
    ok = abs(value - readme) <= width + 1e-9
    return Verdict(claim, shown, f"{'within' if ok else 'DIFFERS by more than'} ±{width:g}", ok)


def compare(claims: list[Claim], measured: dict[str, str], tolerant: bool) -> list[Verdict]:
    """A verdict for each claim but the inputs (the step counts)."""
    return [judge(c, measured.get(c.key), tolerant) for c in claims if c.kind != "input"]


def has_readme_vector_unit() -> bool:
    """Whether this CPU has AVX-512, the vector unit of the README's runs, so that a native
    build (the default) computes the same bits as they did."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"^flags\s*:.*\bavx512f\b", flags, re.M) is not None


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------

def say(text: str) -> None:
    print(text, flush=True)


def run_logged(command: list[str], log: Path, reuse: bool, done: str) -> str:
    """Runs command, printing its output as it comes, and keeps it in log (first line: the
    command). With reuse, a log of the same command that contains done is read instead."""
    header = "# " + shlex.join(command) + "\n"
    if reuse and log.is_file():
        text = log.read_text(encoding="utf-8")
        if text.startswith(header) and re.search(done, text, re.M):
            say(f"  reusing {log} (the same command, finished)")
            return text
    say(f"  $ {shlex.join(command)}")
    started = time.monotonic()
    lines = [header]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          encoding="utf-8", errors="replace", bufsize=1) as child:
        for line in child.stdout:
            lines.append(line)
            say("  | " + line.rstrip("\n"))
    log.write_text("".join(lines), encoding="utf-8")
    if child.returncode != 0:
        raise RuntimeError(f"{command[1]} exited with {child.returncode}: see {log}")
    say(f"  ({time.monotonic() - started:.0f} s)")
    return "".join(lines)


def swapped_corpus(source: Path, target: Path) -> None:
    """The README's `awk -F'\\t' -v OFS='\\t' '{print $2, $1}'` on each part: a corpus into
    English made from one out of English. An existing folder must hold exactly that."""
    for part in ("train", "dev", "test"):
        lines = []
        with open(source / f"{part}.tsv", encoding="utf-8", newline="") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                lines.append(f"{fields[1] if len(fields) > 1 else ''}\t{fields[0]}\n")
        wanted = "".join(lines)
        path = target / f"{part}.tsv"
        if path.exists():
            if path.read_text(encoding="utf-8") != wanted:
                raise RuntimeError(f"{path} is not {source / f'{part}.tsv'} with its columns "
                                   "swapped: move it away and run again")
            continue
        target.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted, encoding="utf-8")
        say(f"  made {path} from {source / f'{part}.tsv'}, columns swapped")


@dataclasses.dataclass
class Settings:
    binary: Path
    data: Path
    out: Path
    threads: int | None
    reuse: bool
    seed: int | None = None


def reproduce(run: str, steps: int, s: Settings) -> dict[str, str]:
    """Trains and evaluates one run as the README does; returns every number measured."""
    corpus = s.data / CORPUS[run]
    if run == "zh-en":
        swapped_corpus(s.data / "zh_CN", corpus)
    for part in ("train", "dev", "test"):
        if not (corpus / f"{part}.tsv").is_file():
            raise FileNotFoundError(f"{corpus / f'{part}.tsv'} does not exist: make the corpus "
                                    "first (python3 scripts/corpus.py de zh_CN)")
    s.out.mkdir(parents=True, exist_ok=True)
    threads = ["--threads", str(s.threads)] if s.threads is not None else []
    seed = ["--seed", str(s.seed)] if s.seed is not None else []
    checkpoint = s.out / f"{run}.safetensors"
    say(f"[{run}] training for {steps} steps")
    measured = parse_train(run_logged(
        [str(s.binary), "train", "--task", "translate", "--data", str(corpus / "train.tsv"),
         "--dev", str(corpus / "dev.tsv"), "--steps", str(steps), "--save", str(checkpoint)]
        + seed + threads, s.out / f"{run}.train.log", s.reuse, r"^saved: .*the run's page"))

    counts = near_duplicates.count_corpus(corpus, english=ENGLISH_COLUMN[run])
    for count in counts.values():
        say(f"[{run}] {count.summary()}")
    test = counts["test"]
    measured.update({"near.long": f"{test.long:,}", "near.count": f"{len(test.near):,}",
                     "near.percent": f"{100 * test.share:.1f}",
                     "near.dev_percent": f"{100 * counts['dev'].share:.1f}"})
    near_file, far_file = near_duplicates.write_split(test, s.out / run)

    hypotheses = s.out / f"{run}.test.txt"
    for prefix, data, extra in [("test", corpus / "test.tsv", ["--hypotheses", str(hypotheses)]),
                                ("test.near", near_file, []), ("test.far", far_file, [])]:
        say(f"[{run}] scoring {data}, beam 4")
        log = s.out / f"{run}.{prefix}.eval.log"
        measured.update(parse_eval(run_logged(
            [str(s.binary), "eval", "--ckpt", str(checkpoint), "--data", str(data), "--beam", "4"]
            + extra + threads, log, s.reuse, r"^chrF2 = "), prefix))

    pairs = [line.split("\t") for line in near_duplicates.read_lines(corpus / "test.tsv")]
    translations = hypotheses.read_text(encoding="utf-8").split("\n")[:len(pairs)]
    measured.update(exact_translations([p[0] for p in pairs], [p[1] for p in pairs],
                                       translations))
    for (src, _), translation in zip(pairs, translations):
        measured[f"example:{src}"] = translation
    return measured


def print_measured(run: str, measured: dict[str, str]) -> None:
    """--quick: the numbers as measured, nothing compared."""
    for key in ("parameters", "dev.bleu", "dev.chrf", "test.bleu", "test.chrf", "test.near.bleu",
                "test.near.chrf", "test.far.bleu", "test.far.chrf", "exact.exact", "near.count",
                "near.long", "near.percent"):
        say(f"{run:6} {key:20} {measured.get(key, '-')}")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--only", nargs="+", choices=RUN_NAMES, metavar="RUN",
                        help="run only these: de, zh_CN, zh-en (default: all three)")
    parser.add_argument("--binary", type=Path, default=ROOT / "build" / "bin" / "transformer",
                        help="the transformer program (default: build/bin/transformer)")
    parser.add_argument("--data", type=Path, default=ROOT / "out",
                        help="the folder holding the corpora de/ and zh_CN/ (default: out/)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "reproduce",
                        help="where checkpoints, logs and translations go (default: "
                             "out/reproduce/)")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md",
                        help="the README whose numbers are checked (default: README.md)")
    parser.add_argument("--threads", type=int, help="passed to transformer (same bits for any)")
    parser.add_argument("--seed", type=int,
                        help="train with this seed instead of the README's (the default, 1): "
                             "runs that differ only by chance, to see how far scores move")
    parser.add_argument("--reuse", action="store_true",
                        help="read a finished train or eval of the same command from its log in "
                             "--out instead of running it again")
    parser.add_argument("--quick", nargs="?", type=int, const=QUICK_STEPS, metavar="STEPS",
                        help=f"smoke test: {QUICK_STEPS} steps (or STEPS) each, nothing compared")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--exact", dest="tolerant", action="store_false", default=None,
                      help="every number must be the README's (default on AVX-512)")
    mode.add_argument("--tolerant", dest="tolerant", action="store_true",
                      help="scores within the tolerances (default without AVX-512)")
    parser.set_defaults(tolerant=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    runs = [r for r in RUN_NAMES if not args.only or r in args.only]
    if not os.access(args.binary, os.X_OK):
        print(f"{args.binary} is not an executable file: build it first (./run.sh), or name "
              "it with --binary", file=sys.stderr)
        return 2
    settings = Settings(args.binary, args.data, args.out, args.threads, args.reuse, args.seed)
    try:
        claims = {} if args.quick else readme_claims(args.readme.read_text(encoding="utf-8"))
    except (OSError, ReadmeError) as e:
        print(e, file=sys.stderr)
        return 2
    tolerant = args.tolerant if args.tolerant is not None else not has_readme_vector_unit()
    if not args.quick:
        say("comparing " + ("within the tolerances of scripts/reproduce_real_text.py (not on "
                            "AVX-512, or --tolerant)" if tolerant else
                            "exactly (AVX-512, as the README's runs; --tolerant for a binary "
                            "built for another vector unit)"))
    verdicts: list[Verdict] = []
    started = time.monotonic()
    for run in runs:
        steps = args.quick or int(next(c.value for c in claims[run] if c.key == "steps"))
        try:
            measured = reproduce(run, steps, settings)
        except (OSError, RuntimeError) as e:
            print(f"[{run}] {e}", file=sys.stderr)
            return 2
        if args.quick:
            print_measured(run, measured)
            continue
        run_verdicts = compare(claims[run], measured, tolerant)
        for v in run_verdicts:
            say(v.line())
        verdicts += run_verdicts
    say(f"{time.monotonic() - started:.0f} s in all")
    if args.quick:
        return 0
    failed = [v for v in verdicts if not v.ok]
    say(f"{len(verdicts) - len(failed)} of {len(verdicts)} numbers match the README"
        + ("" if not failed else "; these do not:"))
    for v in failed:
        say("  " + v.line())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
