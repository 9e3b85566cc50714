#!/usr/bin/python3
"""Table of compute-before-after.sh's runs: per preset, batch and trainer, the median over alternations of each run's
median step, before and after, [min-max]. Usage: compute-before-after.py OUT_DIR"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
cells = {}
for side in ("before", "after"):
    for f in sorted(glob.glob(os.path.join(out, side + "-*", "compute.json"))):
        for row in json.load(open(f))["rows"]:
            key = (row["preset"], row["batch"], row["threads"], row["trainer"])
            cells.setdefault(key, {"before": [], "after": []})[side].append(row["medianMs"])
print("| preset | batch | threads | trainer | before ms | after ms | after / before |")
print("|---|---:|---:|---|---:|---:|---:|")
for (preset, batch, threads, trainer), v in cells.items():
    b, a = statistics.median(v["before"]), statistics.median(v["after"])
    print(f"| {preset} | {batch} | {threads} | {trainer} | {b:.1f} [{min(v['before']):.1f}-{max(v['before']):.1f}]"
          f" | {a:.1f} [{min(v['after']):.1f}-{max(v['after']):.1f}] | {a / b:.2f} |")
n = len(next(iter(cells.values()))["before"])
print(f"\n{n} alternation(s) of one run each; every run's figure is the median of 4 steps after 2 warm-up steps.")
