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

--varlen: compare.py's packed sequences instead (bench/varlen_lengths.py; --seqlen is then ignored): the grid is sized
for the longest sequence, a shorter one's surplus blocks exit at once (--empty, in key-tile steps), and the grid's order
is set beside the sequences longest first and every tile heaviest first (a sorted schedule, the most any order gives).

    python3 bench/block_order_model.py --varlen --block-m 128 --block-n 128 --heads 16
"""
import argparse
import heapq
import math

from varlen_lengths import lengths


def makespan(costs, sms):
    """Greedy list scheduling of `costs` in order on `sms` machines: the time the last one finishes."""
    free_at = [0.0] * sms
    for c in costs:
        heapq.heappush(free_at, heapq.heappop(free_at) + c)
    return max(free_at)


def busy_fraction(costs, sms):
    """The same schedule's total work / (sms x makespan)."""
    return sum(costs) / (sms * makespan(costs, sms))


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


def varlen_orders(lens, block_m, block_n, heads, overhead, empty):
    """The grid's order (sequence, head, query tile heaviest first), the same with the longest sequences first, and
    every tile sorted heaviest first."""
    per_seq = [tile_costs(n, block_m, block_n, overhead) for n in lens]
    tiles = max(len(c) for c in per_seq)

    def grid(order):
        return [x for c in order for _ in range(heads) for x in [empty] * (tiles - len(c)) + c[::-1]]

    every = sorted((x for c in per_seq for _ in range(heads) for x in c), reverse=True)
    return {"grid order": grid(per_seq), "longest sequence first": grid(sorted(per_seq, key=len, reverse=True)),
            "every tile heaviest first": every}


def snake_makespan(lens, block_m, block_n, heads, overhead, sms):
    """Looping blocks over tile/packed_tiles.cuh's table: a position is one head's query tiles j and tiles - 1 - j (the
    middle one alone), longest sequences first, a sequence's heads in turn; block i of G takes positions i, 2G - 1 - i,
    2G + i, ... and runs them back to back, each tile costing its key tiles plus `overhead` (what the loop leaves of a
    tile's prologue and epilogue). -> (the slowest block's time, the work)."""
    table = []
    for c in sorted((tile_costs(n, block_m, block_n, overhead) for n in lens), key=len, reverse=True):
        pairs = [c[j] + (c[len(c) - 1 - j] if len(c) - 1 - j != j else 0) for j in range((len(c) + 1) // 2)]
        table += pairs * heads
    blocks = min(sms, len(table))
    load = [0.0] * blocks
    for pos, c in enumerate(table):
        n, i = divmod(pos, blocks)
        load[blocks - 1 - i if n & 1 else i] += c
    return max(load), sum(table)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seqlen", type=int)
    ap.add_argument("--varlen", action="store_true", help="compare.py --varlen's packed sequences")
    ap.add_argument("--empty", type=float, default=0.02, help="--varlen: a surplus block's cost in key-tile steps")
    ap.add_argument("--block-m", type=int, required=True)
    ap.add_argument("--block-n", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--sms", type=int, default=132, help="default: the H200's 132")
    ap.add_argument("--overhead", type=float, default=2.0, help="a tile's fixed cost in key-tile steps")
    ap.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--loop-overhead", type=float, default=0.5,
                    help="--varlen: a tile's fixed cost in key-tile steps in looping blocks (the snake schedule)")
    a = ap.parse_args()
    if a.varlen:
        lens = lengths()
        print(f"{len(lens)} sequences of {min(lens)}..{max(lens)} tokens, {a.heads} heads, {a.sms} SMs")
        grid_time = None
        for label, order in varlen_orders(lens, a.block_m, a.block_n, a.heads, a.overhead, a.empty).items():
            t = makespan(order, a.sms)
            grid_time = grid_time or t
            print(f"  {label:26s} busy {busy_fraction(order, a.sms):.4f}  time {t:9.1f} steps ({t / grid_time:.4f})")
        t, work = snake_makespan(lens, a.block_m, a.block_n, a.heads, a.loop_overhead, a.sms)
        print(f"  {'snake over the tile table':26s} busy {work / (a.sms * t):.4f}  time {t:9.1f} steps "
              f"({t / grid_time:.4f}; overhead {a.loop_overhead} a tile)")
        return
    if a.seqlen is None:
        ap.error("--seqlen is required without --varlen")
    costs = tile_costs(a.seqlen, a.block_m, a.block_n, a.overhead)
    print(f"{len(costs)} query tiles per head, {len(costs) * a.heads * a.batch} blocks on {a.sms} SMs")
    for g in sorted({min(g, a.heads) for g in a.groups}):
        label = "grid order (1 head)" if g == 1 else f"groups of <= {g} heads"
        print(f"  {label:22s} busy {busy_fraction(grouped_order(costs, a.heads, a.batch, g), a.sms):.4f}")


if __name__ == "__main__":
    main()
