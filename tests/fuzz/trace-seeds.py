#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz-trace target into a folder: small
synthetic traces of each pattern, one with a saved replay, and copies of
them with one index row, meta value or table changed the ways a damaged
or hostile file could (a copied chunk row, times near 2^64, a row naming
no process, an unknown kind, a truncated blob, a newer format version, a
replay series cut short). Each file is compacted to 512-byte pages without
a -wal, so that it is one self-contained input of a few KiB.

Usage: MEMTRACE=build/cli/memtrace tests/fuzz/trace-seeds.py OUT-FOLDER
The libFuzzer run then grows the corpus from these (README "Testing")."""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

EDITS = {
    "copied-row": "INSERT INTO chunks (process, device, kind, first_ts, last_ts, first_seq,"
                  " count, codec, raw_bytes, layers, blob) SELECT process, device, kind,"
                  " first_ts, last_ts, first_seq, count, codec, raw_bytes, layers, blob"
                  " FROM chunks ORDER BY id LIMIT 1",
    "late-last-ts": "UPDATE chunks SET last_ts = -5 WHERE id = 2",
    "early-first-ts": "UPDATE chunks SET first_ts = 0 WHERE id = 1",
    "no-process": "UPDATE chunks SET process = 9 WHERE id = 1",
    "no-device": "UPDATE chunks SET device = 0 WHERE id = 1",
    "unknown-kind": "UPDATE chunks SET kind = 12 WHERE id = 1",
    "count-off": "UPDATE chunks SET count = count + 1 WHERE id = 1",
    "short-blob": "UPDATE chunks SET blob = substr(blob, 1, length(blob) / 2) WHERE id = 1",
    "newer-version": "UPDATE meta SET value = '2' WHERE key = 'format_version'",
    "no-strings": "DROP TABLE strings",
    "short-series": "UPDATE replays SET series = substr(series, 1, 30)",
    "negative-ids": "UPDATE processes SET id = -3; UPDATE chunks SET process = -3",
}


def compact(path):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("PRAGMA page_size = 512")
    db.execute("VACUUM")
    db.close()


def main():
    out = sys.argv[1]
    memtrace = os.environ.get("MEMTRACE", "memtrace")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        bases = []
        for pattern, events in (("train", 120), ("random", 60), ("small", 60)):
            path = os.path.join(tmp, pattern + ".db")
            subprocess.run([memtrace, "synth", "-p", pattern, "-n", str(events), "-o", path],
                           check=True, stdout=subprocess.DEVNULL)
            bases.append(path)
        replayed = os.path.join(tmp, "replayed.db")
        shutil.copy(bases[1], replayed)
        subprocess.run([memtrace, "replay", "--backend", "sim", "--policy", "native,caching",
                        replayed], check=True, stdout=subprocess.DEVNULL)
        bases.append(replayed)
        for path in bases:
            compact(path)
            shutil.copy(path, os.path.join(out, os.path.basename(path)))
        for name, sql in EDITS.items():
            path = os.path.join(out, name + ".db")
            shutil.copy(replayed, path)
            db = sqlite3.connect(path)
            db.executescript(sql)
            db.close()
            compact(path)


if __name__ == "__main__":
    main()
