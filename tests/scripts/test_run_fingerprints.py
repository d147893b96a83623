#!/usr/bin/env python3
"""scripts/run_fingerprints.py: its masks hide the timings and nothing else, and it tells a
binary that trains the same from one that does not.

Usage: test_run_fingerprints.py TRANSFORMER_BINARY
"""
import json
import os
import stat
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"
SCRIPT = SCRIPTS / "run_fingerprints.py"
sys.path.insert(0, str(SCRIPTS))
import run_fingerprints  # noqa: E402

BINARY = None  # set from the command line


def fingerprints(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          check=False)


def safetensors_with(metadata: dict) -> bytes:
    header = json.dumps({"__metadata__": metadata}).encode()
    return struct.pack("<Q", len(header)) + header + b"TENSORS"


class Masks(unittest.TestCase):
    def test_timings_masked_and_numbers_kept(self):
        line = ("60 steps in 0.1s: final loss 0.5012, 133524 target tokens/s\n"
                "20/60 loss 1.2345 lr 3.1e-04 (0.4s) 425 sentence pairs/s\n")
        self.assertEqual(run_fingerprints.mask_text(line),
                         "60 steps in #s: final loss 0.5012, # target tokens/s\n"
                         "20/60 loss 1.2345 lr 3.1e-04 (#s) # sentence pairs/s\n")

    def test_page_timings_in_the_state_set_to_zero(self):
        page = {"training_seconds": 1.5, "checking_seconds": 0.25, "metric_values": [0, 40]}
        masked = run_fingerprints.masked_safetensors(
            safetensors_with({"step": "3", "history.page": json.dumps(page)}))
        other = run_fingerprints.masked_safetensors(
            safetensors_with({"step": "3", "history.page": json.dumps(
                {**page, "training_seconds": 9.0, "checking_seconds": 2.0})}))
        self.assertEqual(masked, other)
        changed = run_fingerprints.masked_safetensors(
            safetensors_with({"step": "3", "history.page": json.dumps(
                {**page, "metric_values": [0, 20]})}))
        self.assertNotEqual(masked, changed)
        self.assertTrue(masked.endswith(b"TENSORS"))


class Compare(unittest.TestCase):
    def test_saved_reports(self):
        with tempfile.TemporaryDirectory() as folder:
            a, b = Path(folder, "a.txt"), Path(folder, "b.txt")
            a.write_text("copy-noam train.exit 0\ncopy-noam model.safetensors 00aa\ndigest 1\n")
            b.write_text("copy-noam train.exit 0\ncopy-noam model.safetensors 00bb\ndigest 2\n")
            same = fingerprints("--compare", str(a), str(a))
            self.assertEqual(same.returncode, 0, same.stderr)
            differ = fingerprints("--compare", str(a), str(b))
            self.assertEqual(differ.returncode, 1)
            self.assertIn("copy-noam model.safetensors", differ.stdout)
            self.assertNotIn("train.exit", differ.stdout)


class Runs(unittest.TestCase):
    """Two short runs of the real binary: against itself, and against one seeded otherwise."""

    def test_the_same_binary_is_the_same(self):
        done = fingerprints("--binary", BINARY, "--against", BINARY, "--only", "copy-noam",
                            "copy-resume")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("fingerprints are the same", done.stderr)

    def test_a_change_of_behaviour_is_found(self):
        with tempfile.TemporaryDirectory() as folder:
            # A "refactor" that trains from another seed: every output changes.
            other = Path(folder, "transformer-other-seed")
            other.write_text(f'#!/bin/sh\nexec "{BINARY}" "$@" --seed 9\n')
            other.chmod(other.stat().st_mode | stat.S_IXUSR)
            done = fingerprints("--binary", BINARY, "--against", str(other), "--only",
                                "copy-noam")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("copy-noam model.safetensors", done.stdout)
        self.assertIn("copy-noam losses.tsv", done.stdout)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
