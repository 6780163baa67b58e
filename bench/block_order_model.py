#!/usr/bin/env python3
"""How much of a causal grid's time its block order leaves idle at the end: a model, not a measurement.

A kernel that takes one query tile per block (the f16-ws kernel past 8k keys under the causal mask, and every
kernel with per-sequence keys) gets a grid (query tiles, heads, batch) whose blocks the GPU starts in order,
query tile fastest, each head's heaviest tile first (tile/coords.cuh, block_index). Under the causal mask a tile's
cost grows with its rows, so each head's order runs heavy to light, and the last head's heavy tiles start only a
head's worth of blocks before the end of the grid. The model starts each block on the first SM that frees up (one
block per SM, as the warp-specialized kernel's register split allows), gives each tile a cost of its visited key
tiles plus a fixed overhead (its prologue and epilogue, in key-tile steps), and reports the busy fraction of
SMs x makespan for the grid's order and for groups of G heads, each group running its tiles heaviest first over
its heads (G = heads: every head's heaviest tile before any head's second; groups of as equal sizes as the heads
divide into, the smaller first).

    python3 bench/block_order_model.py --seqlen 16384 --block-m 192 --block-n 128 --heads 32
"""
import argparse
import heapq
import math


def busy_fraction(costs, sms):
    """Greedy list scheduling of `costs` in order on `sms` machines: total work / (sms x makespan)."""
    free_at = [0.0] * sms
    for c in costs:
        heapq.heappush(free_at, heapq.heappop(free_at) + c)
    return sum(costs) / (sms * max(free_at))


def tile_costs(seqlen, block_m, block_n, overhead):
    """Causal (square) rows: query tile m visits the key tiles up to its last row's diagonal."""
    tiles = math.ceil(seqlen / block_m)
    return [math.ceil(min(seqlen, (m + 1) * block_m) / block_n) + overhead for m in range(tiles)]


def group_sizes(heads, group):
    """A sequence's heads in ceil(heads / group) groups of as equal sizes as they divide into, the smaller first: a
    group's heaviest tiles start its size in heads' worth of blocks before its end, so the last is the largest."""
    groups = -(-heads // group)
    small, larger = divmod(heads, groups)
    return [small] * (groups - larger) + [small + 1] * larger


def grouped_order(costs, heads, batch, group):
    """Blocks in groups of about `group` heads per sequence, each group's tiles heaviest first, its heads inner."""
    order = []
    for _ in range(batch):
        for size in group_sizes(heads, group):
            for m in reversed(range(len(costs))):
                order += [costs[m]] * size
    return order


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seqlen", type=int, required=True)
    ap.add_argument("--block-m", type=int, required=True)
    ap.add_argument("--block-n", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--sms", type=int, default=132, help="default: the H200's 132")
    ap.add_argument("--overhead", type=float, default=2.0, help="a tile's fixed cost in key-tile steps")
    ap.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    a = ap.parse_args()
    costs = tile_costs(a.seqlen, a.block_m, a.block_n, a.overhead)
    print(f"{len(costs)} query tiles per head, {len(costs) * a.heads * a.batch} blocks on {a.sms} SMs")
    for g in sorted({min(g, a.heads) for g in a.groups}):
        label = "grid order (1 head)" if g == 1 else f"groups of <= {g} heads"
        print(f"  {label:22s} busy {busy_fraction(grouped_order(costs, a.heads, a.batch, g), a.sms):.4f}")


if __name__ == "__main__":
    main()
