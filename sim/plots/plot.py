#!/usr/bin/python3
"""Plots of one fabricflow-sim output directory, or a comparison of several.

    plot.py DIR                 -> DIR/{throughput,latency,group0,timeseries}.png
    plot.py --compare OUT DIR.. -> OUT/{throughput,latency}.png, one curve per DIR
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def fl(x):
    try:
        return float(x)
    except ValueError:
        return float("nan")


def curves(dirs, out):
    os.makedirs(out, exist_ok=True)
    for key, ylabel, name in [
        ("accepted_phits_node_cycle", "accepted (phits/node/cycle)", "throughput.png"),
        ("avg_latency_cycles", "average latency (cycles)", "latency.png"),
    ]:
        plt.figure(figsize=(6, 4))
        for d in dirs:
            r = rows(os.path.join(d, "results.csv"))
            if not r:
                continue
            label = f"{r[0]['routing']} {r[0]['traffic']}"
            plt.plot([fl(x["offered_load"]) for x in r], [fl(x[key]) for x in r], marker="o", label=label)
        plt.xlabel("offered load (phits/node/cycle)")
        plt.ylabel(ylabel)
        if key.startswith("avg"):
            plt.yscale("log")
        plt.grid(alpha=0.3)
        plt.legend(fontsize=7)
        plt.tight_layout()
        plt.savefig(os.path.join(out, name), dpi=110)
        plt.close()


def one(d):
    curves([d], d)
    g = rows(os.path.join(d, "group0.csv"))
    if g:
        loads = sorted({x["offered_load"] for x in g}, key=fl)
        plt.figure(figsize=(6, 4))
        for ld in loads:
            xs = [x for x in g if x["offered_load"] == ld]
            plt.plot([int(x["switch"]) for x in xs], [fl(x["accepted_phits_node_cycle"]) for x in xs], marker="s", label=f"load {ld}")
        plt.xlabel("switch of group 0")
        plt.ylabel("accepted (phits/node/cycle)")
        plt.legend(fontsize=7)
        plt.grid(alpha=0.3)
        plt.tight_layout()
        plt.savefig(os.path.join(d, "group0.png"), dpi=110)
        plt.close()
    t = rows(os.path.join(d, "timeseries.csv"))
    if t:
        loads = sorted({x["offered_load"] for x in t}, key=fl)
        fig, ax = plt.subplots(figsize=(7, 4))
        ax2 = ax.twinx()
        for ld in loads:
            xs = [x for x in t if x["offered_load"] == ld][:-1]
            ax.plot([int(x["cycle"]) for x in xs], [fl(x["throughput"]) for x in xs], label=f"thr load {ld}")
            ax2.plot([int(x["cycle"]) for x in xs], [fl(x["mean_p"]) for x in xs], ls="--", alpha=0.5)
        ax.set_xlabel("cycle")
        ax.set_ylabel("throughput (phits/node/cycle)")
        ax2.set_ylabel("mean P (%) dashed")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "timeseries.png"), dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--compare":
        curves(sys.argv[3:], sys.argv[2])
    elif len(sys.argv) == 2:
        one(sys.argv[1])
    else:
        sys.exit(__doc__)
