"""The packed sequence lengths of compare.py --varlen (bench/compare_varlen.py): 64k tokens in sequences of lengths
uniform in 1..8k, seeded. Kept apart from compare_varlen.py so that tools without torch (block_order_model.py) use the
same lengths."""
import random

TOKENS, MAX_LEN = 65536, 8192


def lengths(seed=0):
    rng, out = random.Random(seed), []
    while sum(out) < TOKENS:
        out.append(min(rng.randint(1, MAX_LEN), TOKENS - sum(out)))
    return out
