"""PNG plots (matplotlib, Agg backend)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def throughput_over_time(series, path, title):
    """series: {mode: [(t, aggregate Mb/s), ...]}"""
    fig, ax = plt.subplots(figsize=(7, 4))
    for mode, pts in series.items():
        if pts:
            ax.plot([t for t, _ in pts], [v for _, v in pts], marker=".", label=mode)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("aggregate throughput (Mb/s)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def per_switch_bars(per_mode, path, title):
    """per_mode: {mode: {switch: mean accepted Mb/s}}"""
    modes = list(per_mode)
    switches = sorted({s for v in per_mode.values() for s in v})
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(modes))
    for i, mode in enumerate(modes):
        xs = [j + i * width for j in range(len(switches))]
        ax.bar(xs, [per_mode[mode].get(s, 0.0) for s in switches], width, label=mode)
    ax.set_xticks([j + width * (len(modes) - 1) / 2 for j in range(len(switches))])
    ax.set_xticklabels(switches)
    ax.set_ylabel("accepted throughput (Mb/s)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def p_over_time(per_mode, path, title):
    """per_mode: {mode: [(t, switch, port, P percent), ...]} (group-0 switches only); one panel
    per QCN-SW mode, one line per fabric port."""
    modes = [m for m, pts in per_mode.items() if pts]
    if not modes:
        return
    fig, axes = plt.subplots(len(modes), 1, figsize=(7, 3 * len(modes)), squeeze=False)
    for ax, mode in zip(axes[:, 0], modes):
        lines = {}
        for t, sw, port, p in per_mode[mode]:
            lines.setdefault(f"{sw}:{port}", []).append((t, p))
        for label, pts in sorted(lines.items()):
            ax.plot([t for t, _ in pts], [p for _, p in pts], label=label)
        ax.set_ylim(0, 105)
        ax.set_ylabel("P minimal (%)")
        ax.set_title(f"{title}: {mode}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
