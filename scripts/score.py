#!/usr/bin/env python3
"""Corpus BLEU and chrF of a file of translations against a file of references, one sentence
a line, computed here from their definitions and nothing of gradformer's, so that the numbers
`transformer eval` prints can be checked by a second implementation:

    python3 scripts/score.py HYPOTHESES REFERENCES [--tokenize auto|13a|zh]

BLEU (Papineni et al. 2002) is computed as sacreBLEU 2.x computes it with --smooth-method
none, on its tokenizers 13a and zh; chrF as sacreBLEU's default chrF (character 6-grams,
beta 2, whitespace removed). data/bleu.h describes both; the output has the same layout as
`transformer eval`. When nltk is installed (python3-nltk), its corpus_bleu recomputes BLEU
from the same tokens as a check of the n-gram arithmetic, and a difference of more than 0.01
is an error. Plain Python 3, standard library only.
"""

import argparse
import math
import re
import sys
from collections import Counter

MAX_ORDER = 4  # BLEU: n-grams n = 1..4
CHAR_ORDER = 6  # chrF: character n-grams n = 1..6
BETA = 2  # chrF: recall weighs twice as much as precision

# The blocks the zh tokenizer sets apart, as sacreBLEU's list reads them in Python. Two entries
# there are meant as the astral blocks U+20000..U+2A6D6 and U+2F800..U+2FA1D, but a \u escape
# takes four digits, so the bounds are two-character strings ("\u2000" "0" and so on); compared
# with one character they admit U+2001..U+2A6D and U+2F81..U+2FA1.
ZH_BLOCKS = [
    (0x3400, 0x4DB5), (0x4E00, 0x9FA5), (0x9FA6, 0x9FBB), (0xF900, 0xFA2D),
    (0xFA30, 0xFA6A), (0xFA70, 0xFAD9), (0x2001, 0x2A6D), (0x2F81, 0x2FA1),
    (0xFF00, 0xFFEF), (0x2E80, 0x2EFF), (0x3000, 0x303F), (0x31C0, 0x31EF),
    (0x2F00, 0x2FDF), (0x2FF0, 0x2FFF), (0x3100, 0x312F), (0x31A0, 0x31BF),
    (0xFE10, 0xFE1F), (0xFE30, 0xFE4F), (0x2600, 0x26FF), (0x2700, 0x27BF),
    (0x3200, 0x32FF), (0x3300, 0x33FF),
]

# The rules both tokenizers end with (R1-R4 in data/bleu.h).
ASCII_MARKS = "".join(re.escape(c) for c in "{|}~[\\]^_`!\"#$%&()*+:;<=>?@/")
RULES = [
    (re.compile("([" + ASCII_MARKS + "])"), r" \1 "),  # R1: ASCII punctuation but ' , - .
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),  # R2: . or , after a non-digit
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),  # R3: . or , before a non-digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # R4: - after a digit
]


def apply_rules(line):
    for pattern, replacement in RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def tokens_13a(line):
    for old, new in [("<skipped>", ""), ("-\n", ""), ("\n", " "), ("&quot;", '"'),
                     ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")]:
        line = line.replace(old, new)
    return apply_rules(" " + line + " ")


def tokens_zh(line):
    def set_apart(c):
        return any(first <= ord(c) <= last for first, last in ZH_BLOCKS)

    return apply_rules("".join(" " + c + " " if set_apart(c) else c for c in line.strip()))


def tokenize(line, name):
    line = line.rstrip()  # as sacreBLEU does before its tokenizer
    return tokens_zh(line) if name == "zh" else tokens_13a(line)


def is_ideograph(c):
    o = ord(c)
    return (0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF
            or 0x20000 <= o <= 0x3FFFF)


def choose_tokenizer(references):
    """zh when at least a tenth of the references' non-space characters are CJK ideographs."""
    characters = [c for line in references for c in line if not c.isspace()]
    ideographs = sum(1 for c in characters if is_ideograph(c))
    return "zh" if characters and 10 * ideographs >= len(characters) else "13a"


def ngrams(items, n):
    return Counter(tuple(items[i:i + n]) for i in range(len(items) - n + 1))


def bleu(hypotheses, references, name):
    matches, totals = [0] * MAX_ORDER, [0] * MAX_ORDER
    c = r = 0
    for hypothesis, reference in zip(hypotheses, references):
        hyp, ref = tokenize(hypothesis, name), tokenize(reference, name)
        c, r = c + len(hyp), r + len(ref)
        for n in range(1, MAX_ORDER + 1):
            hyp_counts, ref_counts = ngrams(hyp, n), ngrams(ref, n)
            totals[n - 1] += sum(hyp_counts.values())
            matches[n - 1] += sum(min(k, ref_counts[g]) for g, k in hyp_counts.items())
    precisions = [100.0 * m / t if m else 0.0 for m, t in zip(matches, totals)]
    bp = 0.0 if c == 0 else 1.0 if c > r else math.exp(1 - r / c)
    if all(matches):
        score = 100.0 * bp * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals)) / 4)
    else:
        score = 0.0  # no smoothing
    ratio = c / r if r else 0.0
    return score, (f"BLEU = {score:.2f} {'/'.join(f'{p:.1f}' for p in precisions)} "
                   f"(BP = {bp:.3f} ratio = {ratio:.3f} hyp_len = {c} ref_len = {r}) tok:{name}")


def nltk_bleu(hypotheses, references, name):
    """nltk's corpus BLEU of the same tokens, in percent; None without nltk, or when some
    hypothesis has fewer than 4 tokens: nltk counts an order a sentence has no n-gram of as
    one n-gram (the denominator of its modified precision is at least 1), BLEU as none."""
    try:
        from nltk.translate.bleu_score import corpus_bleu
    except ImportError:
        return None
    hyps = [tokenize(h, name) for h in hypotheses]
    if any(len(h) < MAX_ORDER for h in hyps):
        return None
    refs = [[tokenize(r, name)] for r in references]
    return 100.0 * corpus_bleu(refs, hyps)


def chrf(hypotheses, references):
    hyp_total, ref_total, matched = [0] * CHAR_ORDER, [0] * CHAR_ORDER, [0] * CHAR_ORDER
    for hypothesis, reference in zip(hypotheses, references):
        hyp, ref = "".join(hypothesis.split()), "".join(reference.split())
        for n in range(1, CHAR_ORDER + 1):
            hyp_counts = Counter(hyp[i:i + n] for i in range(len(hyp) - n + 1))
            ref_counts = Counter(ref[i:i + n] for i in range(len(ref) - n + 1))
            hyp_total[n - 1] += sum(hyp_counts.values())
            ref_total[n - 1] += sum(ref_counts.values())
            matched[n - 1] += sum((hyp_counts & ref_counts).values())
    orders = [n for n in range(CHAR_ORDER) if hyp_total[n] and ref_total[n]]
    if not orders:
        return 0.0, 0.0, 0.0
    precision = sum(matched[n] / hyp_total[n] for n in orders) / len(orders)
    recall = sum(matched[n] / ref_total[n] for n in orders) / len(orders)
    if precision + recall == 0:
        return 0.0, 100 * precision, 100 * recall
    f = (1 + BETA**2) * precision * recall / (BETA**2 * precision + recall)
    return 100 * f, 100 * precision, 100 * recall


def read_lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hypotheses", help="translations, one a line")
    parser.add_argument("references", help="references, one a line, in the same order")
    parser.add_argument("--tokenize", choices=["auto", "13a", "zh"], default="auto",
                        help="BLEU's tokenizer (auto: zh when the references are Chinese)")
    args = parser.parse_args()
    hypotheses, references = read_lines(args.hypotheses), read_lines(args.references)
    if len(hypotheses) != len(references):
        sys.exit(f"score.py: {len(hypotheses)} hypotheses but {len(references)} references")
    name = choose_tokenizer(references) if args.tokenize == "auto" else args.tokenize
    score, line = bleu(hypotheses, references, name)
    print(line)
    f, precision, recall = chrf(hypotheses, references)
    print(f"chrF2 = {f:.2f} (precision {precision:.2f}, recall {recall:.2f})")
    check = nltk_bleu(hypotheses, references, name)
    if check is not None:
        print(f"nltk corpus_bleu = {check:.2f}")
        if abs(check - score) > 0.01:
            sys.exit(f"score.py: nltk's BLEU {check:.4f} differs from {score:.4f}")


if __name__ == "__main__":
    main()
