#!/usr/bin/python3
"""Markdown tables from fabricflow-sim output directories.

    summary.py ROOT   (ROOT/{uniform,adv1}/MODE/results.csv, ROOT/adv1/MODE/group0.csv,
                       ROOT/transient/MODE/reaction.csv)
"""
import csv
import os
import sys


def rows(p):
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def table(root, traffic, key, fmt):
    base = os.path.join(root, traffic)
    if not os.path.isdir(base):
        return
    modes = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    order = ["minimal", "valiant", "ugal-l", "pause", "qcnsw-base", "qcnsw-sp", "qcnsw-fc", "qcnsw-combined"]
    modes = [m for m in order if m in modes] + [m for m in modes if m not in order]
    data = {m: rows(os.path.join(base, m, "results.csv")) for m in modes}
    loads = sorted({r["offered_load"] for m in modes for r in data[m]}, key=float)
    if not loads:
        return
    print(f"\n{traffic}: {key}\n")
    print("| mode | " + " | ".join(f"{float(l):.1f}" for l in loads) + " |")
    print("|---|" + "---|" * len(loads))
    for m in modes:
        by = {r["offered_load"]: r for r in data[m]}
        cells = [fmt(by[l][key]) if l in by else "" for l in loads]
        print(f"| {m} | " + " | ".join(cells) + " |")


def group0(root, load="0.400000"):
    base = os.path.join(root, "adv1")
    if not os.path.isdir(base):
        return
    print(f"\nADV+1 at load {float(load):.1f}: accepted phits/node/cycle per switch of group 0 (min/max spread)\n")
    print("| mode | s0 | s1 | s2 | s3 | s4 | s5 | s6 | s7 | min/max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d))):
        g = [r for r in rows(os.path.join(base, m, "group0.csv")) if r["offered_load"] == load]
        if not g:
            continue
        v = [float(r["accepted_phits_node_cycle"]) for r in g]
        print(f"| {m} | " + " | ".join(f"{x:.3f}" for x in v) + f" | {min(v) / max(v):.2f} |")


def reaction(root):
    base = os.path.join(root, "transient")
    if not os.path.isdir(base):
        return
    print("\nuniform -> ADV+1 transient: final throughput and reaction time\n")
    print("| mode | load | final throughput | reaction (cycles) | reaction (µs) |")
    print("|---|---|---|---|---|")
    for m in sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d))):
        for r in rows(os.path.join(base, m, "reaction.csv")):
            ns = r["reaction_ns"]
            us = f"{float(ns) / 1000:.2f}" if ns != "never" else "never"
            print(f"| {m} | {float(r['offered_load']):.1f} | {float(r['final_throughput']):.3f} | {r['reaction_cycles']} | {us} |")


if __name__ == "__main__":
    root = sys.argv[1]
    for t in ["uniform", "adv1"]:
        table(root, t, "accepted_phits_node_cycle", lambda x: f"{float(x):.3f}")
    for t in ["uniform", "adv1"]:
        table(root, t, "avg_latency_cycles", lambda x: f"{float(x):.0f}")
    group0(root)
    reaction(root)
