#!/usr/bin/env python3
"""Heat maps of a tile-config sweep: for each problem, B_r x B_c -> best TFLOP/s over the warp counts.

Input: the JSON that `fa-jit-bench --sweep --json` prints (a file, or - for stdin).
Output: one PNG with one panel per problem; cells with no correct config are left blank, the fastest cell is
outlined, and the config attention() chooses is marked with a dot.

    fa-jit-bench --seqlen-q 512,4096 --head-dim 64,128 --sweep --json > sweep.json
    python3 bench/heatmap.py sweep.json -o sweep.png
"""
import argparse
import json
import math
import sys
from collections import OrderedDict


def load_rows(path):
    with (sys.stdin if path == "-" else open(path)) as f:
        data = json.load(f)
    if not isinstance(data, dict) or "rows" not in data:
        sys.exit(f"{path}: not the output of `fa-jit-bench --json` (no 'rows')")
    return data.get("device", {}), data["rows"]


def group_by_problem(rows):
    """problem label -> {(block_m, block_n): best tflops}, plus the chosen (block_m, block_n)."""
    problems = OrderedDict()
    for r in rows:
        p = problems.setdefault(r["problem"], {"best": {}, "chosen": None})
        cell = (r["block_m"], r["block_n"])
        if r.get("chosen"):
            p["chosen"] = cell
        # Only timed rows count (ok, or unchecked under --no-check): a WRONG config's speed means nothing.
        if r["status"] not in ("ok", "unchecked") or r.get("tflops") is None:
            continue
        p["best"][cell] = max(p["best"].get(cell, 0.0), r["tflops"])
    return problems


def plot(device, problems, output, columns):
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    import numpy as np

    n = len(problems)
    cols = min(columns, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")

    for ax, (label, p) in zip(axes.flat, problems.items()):
        cells = set(p["best"]) | ({p["chosen"]} if p["chosen"] else set())
        ms = sorted({m for m, _ in cells})
        ns = sorted({c for _, c in cells})
        grid = np.full((len(ms), len(ns)), np.nan)
        for (m, c), t in p["best"].items():
            grid[ms.index(m), ns.index(c)] = t
        image = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
        fig.colorbar(image, ax=ax, label="TFLOP/s (best over warps)")
        ax.set_xticks(range(len(ns)), [str(c) for c in ns])
        ax.set_yticks(range(len(ms)), [str(m) for m in ms])
        ax.set_xlabel("B_c (key rows per iteration)")
        ax.set_ylabel("B_r (query rows per block)")
        ax.set_title(label, fontsize=9)
        finite = grid[np.isfinite(grid)]
        for i in range(len(ms)):
            for j in range(len(ns)):
                if np.isfinite(grid[i, j]):
                    light = grid[i, j] < (finite.min() + finite.max()) / 2
                    ax.text(j, i, f"{grid[i, j]:.1f}", ha="center", va="center", fontsize=8,
                            color="white" if light else "black")
        if finite.size:
            i, j = np.unravel_index(np.nanargmax(grid), grid.shape)
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
        if p["chosen"]:
            m, c = p["chosen"]
            ax.plot(ns.index(c), ms.index(m) - 0.3, "o", color="red", markersize=4)

    title = "fa-jit-bench sweep"
    if device.get("name"):
        title += f" on {device['name']} (cc {device.get('cc', '?')})"
    fig.suptitle(title + "\nred box: fastest; red dot: chosen by default", fontsize=11)
    fig.tight_layout()
    fig.savefig(output, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="fa-jit-bench --sweep --json output, or - for stdin")
    parser.add_argument("-o", "--output", default="sweep_heatmap.png", help="PNG to write (default %(default)s)")
    parser.add_argument("--columns", type=int, default=3, help="panels per row (default %(default)s)")
    args = parser.parse_args()

    device, rows = load_rows(args.input)
    problems = group_by_problem(rows)
    if not problems:
        sys.exit(f"{args.input}: no rows")
    plot(device, problems, args.output, max(1, args.columns))
    print(f"wrote {args.output} ({len(problems)} problems)")


if __name__ == "__main__":
    main()
