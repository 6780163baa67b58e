#!/usr/bin/env bash
# Installs FlashAttention-4 (flash-attn-4, `flash_attn.cute`) on the GPU machine, which has no network, from the wheel
# folders that ../shared/tools/fa4-wheels.sh downloads here into .fa4/1, .fa4/2 and .fa4/3 (git-ignored). One device
# call may carry at most 64 MiB, so the three folders travel in three calls made back to back (the machine keeps its
# /tmp only while warm, about 30 s after a call):
#
#   call 1, carry [".fa4/1"]:           bash bench/fa4_setup.sh
#   call 2, carry [".fa4/2"]:           bash bench/fa4_setup.sh
#   call 3, carry [".fa4/3", ".carry"]: bash scripts/gpu-check fa4 decode     (gpu-check's fa4 step runs this script)
#
# Each call copies the folders it finds under .fa4/ to $FA4_STAGE (default /tmp/fa4); once every part is there it
# joins the split CUTLASS-DSL wheel, installs everything into $FA4_SITE (default /tmp/fa4site, what bench/compare.py
# adds to its path) and imports it. Exits 0 while parts are missing (saying which); 1 if the install or import fails.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${FA4_STAGE:-/tmp/fa4}
target=${FA4_SITE:-/tmp/fa4site}
# The split wheel's name (fa4-wheels.sh splits it so that each part fits one transfer).
cu13=nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl

check_import() {
    python3 - "$target" <<'PY'
import site, sys
site.addsitedir(sys.argv[1])
from flash_attn.cute import flash_attn_func, flash_attn_varlen_func  # noqa: F401
import flash_attn.cute as m
from importlib.metadata import version
print(f"flash-attn-4 {version('flash-attn-4')} from {m.__file__}")
PY
}

if [ -f "$target/.fa4_installed" ] && check_import 2>/dev/null; then
    exit 0  # installed by an earlier call on this machine
fi

mkdir -p "$stage"
shopt -s nullglob
for dir in .fa4/*/; do
    files=("$dir"*)
    if [ ${#files[@]} -gt 0 ]; then
        cp "${files[@]}" "$stage/"
        echo "fa4: staged ${dir%/} (${#files[@]} files) in $stage"
    fi
done

missing=()
for f in cu13.part.00 cu13.part.01 cu13.part.02 core.whl.zip; do
    [ -f "$stage/$f" ] || missing+=("$f")
done
fa4_wheels=("$stage"/flash_attn_4-*.whl)  # nullglob: empty when missing
[ ${#fa4_wheels[@]} -gt 0 ] || missing+=("flash_attn_4-*.whl")
if [ ${#missing[@]} -gt 0 ]; then
    echo "fa4: not installed yet, $stage lacks: ${missing[*]}"
    echo "fa4: parts come from .fa4/1 (cu13.part.00), .fa4/2 (cu13.part.01), .fa4/3 (the rest): carry each in a call"
    exit 0
fi

py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
[ "$py" = 3.12 ] || echo "fa4: warning: the wheels are for CPython 3.12, python3 is $py"
cat "$stage"/cu13.part.0[0-2] > "$stage/$cu13"
rm -rf "$target"
python3 -m pip install -q --no-index --no-deps --no-compile --target "$target" "$stage"/*.whl
python3 -m zipfile -e "$stage/core.whl.zip" "$target"
rm -f "$stage/$cu13"
check_import
touch "$target/.fa4_installed"
