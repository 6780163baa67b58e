#!/usr/bin/env python3
"""Which compiled kernels a change to kernel_sources/ touches, without a GPU: every kernel `fa-jit-cache warmup`
compiles, from two source trees, compared function by function in SASS.

Each side warms an empty cache of its own with FA_JIT_KERNEL_DIR pointing at its sources (the library compiles them
exactly as attention() would), then every cubin entry is disassembled (cuobjdump or nvdisasm, found as resources.py
finds them) and each function's instruction stream hashed without addresses or NOPs. A function present on both sides
is "same" when the hashes match: identical SASS, so nothing a GPU could measure changed; "changed" otherwise.

    git archive main kernel_sources | tar -x -C /tmp/ks_main --strip-components=1
    python3 bench/kernel_harness/sass_diff.py --base /tmp/ks_main [--change kernel_sources] \\
        [--arch sm_90a] [--warmup-args "--dtype bf16,fp16 --head-dim 64,96,128 ..."]

The default warmup covers the fp16 / bf16 families at head dims 64-256 for short, medium and long rows, both masks,
plain, with each score modifier and all three, packed sequences and pages: about 700 kernels a side, 25-30 minutes on
two cores (narrow --warmup-args to the kernels a change can reach). Kernels that one side's sources do not compile
(a variant the base lacks) are listed and show as "only in" the other. A change that adds a template argument with a
default renames every kernel; --rename-change drops it from the change's names so that those kernels meet the base's,
e.g. --rename-change '(attention_fwd_f16_ws.*)ELb0EEEvNS_15AttentionParams' '\\1EEEvNS_15AttentionParams' (the settled
max's kSettledMax = false). Exit code 0 when nothing changed, 1 otherwise.
"""
import argparse
import collections
import hashlib
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile

import resources

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../.."))
DEFAULT_WARMUP = ("--dtype fp16,bf16 --head-dim 64,96,128,160,192,256 --causal both --seqlen 512,2k,16k "
                  "--features none --features window --features softcap --features alibi "
                  "--features window,softcap,alibi --features varlen --features paged")


def read_entry(path):
    """(arch, kernel, cubin) of a cache entry file (src/cache/entry_format.hpp), or None for a PTX entry."""
    data = open(path, "rb").read()
    if data[:8] != b"FAJITC01":
        sys.exit(f"sass_diff: {path} is not a cache entry")
    flags, meta_len, payload_len = struct.unpack_from("<IQQ", data, 12)
    if flags & 1:
        return None
    meta = data[56:56 + meta_len]
    strings, pos = [], 0
    while pos < len(meta) and len(strings) < 3:  # key, arch, kernel come first
        (n,) = struct.unpack_from("<Q", meta, pos)
        strings.append(meta[pos + 8:pos + 8 + n].decode())
        pos += 8 + n
    return strings[1], strings[2], data[56 + meta_len:56 + meta_len + payload_len]


def function_hashes(tool, cubin):
    """{function name: hash of its instructions (opcodes and operands, no addresses, no NOPs)}."""
    functions, name, body = {}, None, []
    for line in resources.sass_lines(tool, cubin) + ["Function : <end>"]:
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                functions[name] = hashlib.sha1("\n".join(body).encode()).hexdigest()[:12]
            name, body = m.group(1), []
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m and not m.group(1).startswith("NOP"):
            body.append(re.sub(r"0x[0-9a-f]+", "ADDR", m.group(1)) if "BRA" in m.group(1) else m.group(1))
    return functions


def warm(sources, cache_tool, arch, warmup_args, jobs):
    """{(arch, function): hash} of every kernel the warmup compiles from `sources`."""
    cache = tempfile.mkdtemp(prefix="sass_diff_")  # left behind: each side's cubins, for a closer look
    env = dict(os.environ, FA_JIT_KERNEL_DIR=os.path.abspath(sources), FA_JIT_CACHE_DIR=cache)
    env.pop("FA_JIT_CACHE", None)
    cmd = [cache_tool, "warmup", "--arch", arch, "-q", "-j", str(jobs)] + shlex.split(warmup_args)
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        # Kernels one side cannot compile (e.g. a variant the base's sources lack) show as "only in" the other.
        failed = [l for l in (run.stdout + run.stderr).splitlines() if "failed:" in l]
        if not failed:
            sys.exit(f"sass_diff: warmup from {sources} failed:\n{run.stdout}{run.stderr}")
        print(f"sass_diff: {len(failed)} kernels did not compile from {sources}:", *failed, sep="\n  ", file=sys.stderr)
    tool = resources.find_tool()
    if tool is None:
        sys.exit("sass_diff: needs cuobjdump or nvdisasm (see resources.py)")
    out = {}
    for dirpath, _, files in os.walk(cache):
        for f in files:
            entry = read_entry(os.path.join(dirpath, f)) if f.endswith(".fajit") else None
            if entry is None:
                continue
            entry_arch, _, cubin = entry
            for function, digest in function_hashes(tool, cubin).items():
                out[(entry_arch, function)] = digest
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the kernel sources before the change")
    ap.add_argument("--change", default=os.path.join(ROOT, "kernel_sources"), help="after (default: this checkout's)")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--warmup-args", default=DEFAULT_WARMUP, help=f"(default: {DEFAULT_WARMUP})")
    ap.add_argument("--fa-jit-cache", default=os.path.join(ROOT, "build/tools/fa-jit-cache"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("-v", "--verbose", action="store_true", help="list the unchanged functions too")
    ap.add_argument("--rename-change", nargs=2, action="append", default=[], metavar=("REGEX", "REPL"),
                    help="rewrite the change's function names before comparing (re.sub), e.g. to drop a template "
                         "argument the change added with a default: its default kernels then meet the base's")
    a = ap.parse_args()
    base = warm(a.base, a.fa_jit_cache, a.arch, a.warmup_args, a.jobs)
    change = warm(a.change, a.fa_jit_cache, a.arch, a.warmup_args, a.jobs)
    for regex, repl in a.rename_change:
        change = {(arch, re.sub(regex, repl, name)): h for (arch, name), h in change.items()}
    status = collections.Counter()
    for key in sorted(base.keys() | change.keys()):
        state = ("only in base" if key not in change else "only in change" if key not in base else
                 "same" if base[key] == change[key] else "changed")
        status[state] += 1
        if state != "same" or a.verbose:
            print(f"{state:14s} {key[0]} {key[1]}")
    print(", ".join(f"{n} {s}" for s, n in sorted(status.items())) or "no kernels compiled")
    sys.exit(0 if set(status) <= {"same"} else 1)


if __name__ == "__main__":
    main()
