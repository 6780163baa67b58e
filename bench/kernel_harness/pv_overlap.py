"""How much of each key step's softmax overlaps its P V, read from the SASS of warp-specialized kernels (no GPU).

A consumer's key step issues S of tile j and P V of tile j - 1, waits for S (`WARPGROUP.DEPBAR.LE gsb0, 0x1`), and
runs the softmax of S while P V computes, until it must wait for P V (`WARPGROUP.DEPBAR.LE gsb0, 0x0`) before writing
the next P. ptxas places that wait: under register pressure it moves it to the top of the softmax, and the step's
exponentials then run after P V instead of beside it. For each key loop this prints how many of the step's MUFU
operations (`ex2`, and `tanh` with softcap) come before the wait (the masked loop is the one with more compares and
selects than MUFU operations). Compiled with
NVRTC as the library does (resources.py); needs nvdisasm or cuobjdump (see resources.py). --mix adds each key step's
instruction count and most frequent opcodes, turn to turn (d 64 192 x 128: 454 instructions for a thread's 64
scores, 66 of them MUFU), and with cuobjdump the stall counts ptxas encoded in them, summed (one warp's issue time
for the step, fixed latencies included).

  python3 bench/kernel_harness/pv_overlap.py [--arch sm_90a] [--sources DIR] [--mix] \\
      "fa_jit::attention_fwd_f16_ws<fa_jit::bf16_t, 128, 128, 128, 3, false>" ...

Measured with it (bench/NOTES.md): d 128 at 128 keys runs 19 of 66 exponentials before the wait, at 176 keys none.
"""
import argparse
import collections
import os
import re
import sys

import resources


def key_loops(lines):
    """(MUFU operations before the wait for P V, MUFU operations, masked) for each wait for S."""
    out = []
    for i, line in enumerate(lines):
        if "WARPGROUP.DEPBAR.LE gsb0, 0x1" not in line:
            continue
        before = total = compares = 0
        waited = False
        for step in lines[i + 1:]:
            if "BAR.SYNC" in step or "EXIT" in step:
                break  # the next turn
            waited = waited or "WARPGROUP.DEPBAR.LE gsb0, 0x0" in step
            compares += "ISETP" in step or "FSEL" in step
            if "MUFU." in step:
                total += 1
                before += not waited
        out.append((before, total, compares > total // 2))
    return out


def opcode(line):
    """The opcode of a SASS line without its predicate and modifiers (FFMA, MUFU, HGMMA, ...), or None."""
    m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
    return m.group(1) if m else None


def stall_cycles(lines, begin, end):
    """The stall counts ptxas encoded in the instructions of lines[begin:end] (cycles before a warp may issue its next
    instruction: bits 105-108 of each 128-bit instruction, the high word that cuobjdump prints on the line after it),
    summed: the step's issue time for one warp on its own, fixed latencies included. None without the encodings
    (nvdisasm prints none)."""
    total, found = 0, False
    for i in range(begin, min(end, len(lines) - 1)):
        m = re.match(r"\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$", lines[i + 1])
        if opcode(lines[i]) and m:
            total += (int(m.group(1), 16) >> 41) & 0xF
            found = True
    return total if found else None


def turn_gaps(lines):
    """For each turn's barrier (BAR.SYNC) followed by a wgmma: the instructions between them. They run after the
    warpgroup's turn has come, before its GEMMs reach the tensor pipe (FA4's key step has 3 there: bench/NOTES.md,
    "Where the window's cycles go")."""
    gaps = []
    for i, line in enumerate(lines):
        if "BAR.SYNC" not in line:
            continue
        ops = []
        for step in lines[i + 1:]:
            op = opcode(step)
            if op == "HGMMA":
                gaps.append(ops)
                break
            if op in ("BAR", "EXIT"):
                break
            if op:
                ops.append(op)
    return gaps


def step_mix(lines, wait):
    """Instructions of the key step around the wait for S at `wait`, from the turn's barrier before it to the next
    turn's: their number, their summed stall counts (stall_cycles) and the most frequent opcodes."""
    begin = next((i for i in range(wait, -1, -1) if "BAR.SYNC" in lines[i]), 0)
    end = next((i for i in range(wait + 1, len(lines)) if "BAR.SYNC" in lines[i] or "EXIT" in lines[i]), len(lines))
    ops = collections.Counter(op for op in map(opcode, lines[begin:end]) if op)
    return sum(ops.values()), stall_cycles(lines, begin, end), ops.most_common(8)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernels", nargs="+", help="name expressions of attention_f16_ws.cu")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--sources", help="kernel sources to compile (default: this checkout's kernel_sources/)")
    ap.add_argument("--turns", action="store_true",
                    help="also the instructions between each turn's barrier and its first wgmma")
    ap.add_argument("--mix", action="store_true",
                    help="also each key step's instruction count and most frequent opcodes (turn to turn)")
    a = ap.parse_args()
    if a.sources:
        resources.KS = os.path.abspath(a.sources)
    tool = resources.find_tool()
    if tool is None:
        sys.exit("pv_overlap: needs nvdisasm or cuobjdump (see resources.py)")
    for name in a.kernels:
        cubin, _, _, log = resources.nvrtc_compile("attention_f16_ws.cu", a.arch, name)
        if cubin is None:
            sys.exit(f"pv_overlap: {name} does not compile:\n{log}")
        lines = resources.sass_lines(tool, cubin)
        loops = key_loops(lines)
        cells = [f"{'masked' if m else 'unmasked'} {b} / {t}" for b, t, m in loops]
        print(f"{name}: " + (", ".join(cells) if cells else "no key loop found"))
        if "wgmma.mma_async instructions are serialized" in log:
            print("  ptxas serialized the wgmmas")
        if a.mix:
            waits = [i for i, line in enumerate(lines) if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in line]
            for (_, _, masked), wait in zip(loops, waits):
                count, cycles, top = step_mix(lines, wait)
                cycle_text = f", {cycles} stall cycles" if cycles is not None else ""
                print(f"  {'masked' if masked else 'unmasked'} step: {count} instructions{cycle_text}; " +
                      ", ".join(f"{op} {n}" for op, n in top))
        if a.turns:
            for ops in turn_gaps(lines):
                top = collections.Counter(ops).most_common(5)
                print(f"  turn: {len(ops)} instructions before the first wgmma" +
                      (" (" + ", ".join(f"{op} {n}" for op, n in top) + ")" if ops else ""))


if __name__ == "__main__":
    main()
