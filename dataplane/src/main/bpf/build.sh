#!/usr/bin/env bash
# Compiles every *.bpf.c in SRC_DIR (default: beside this script) into OUT_DIR/<name>.bpf.o (called by the Maven
# builds of dataplane and of bench, whose programs include this directory's xaf_shared.h, xaf_parse.h and xaf_csum.h).
# Every object is rebuilt on every call, with no timestamps compared, so a change to a header reaches every program.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT_DIR [SRC_DIR]}
src_dir=$(cd "${2:-$here}" && pwd)
mkdir -p "$out"
command -v clang >/dev/null || { echo "build.sh: clang not found; run ./xaf (as root it installs clang) or apt-get install clang llvm libbpf-dev" >&2; exit 1; }
arch_inc=/usr/include/$(uname -m)-linux-gnu
for src in "$src_dir"/*.bpf.c; do
  [ -e "$src" ] || continue
  obj="$out/$(basename "${src%.c}").o"
  clang -O2 -g -Wall -Werror -target bpf -D__TARGET_ARCH_x86 -I"$src_dir" -I"$here" -I"$arch_inc" -c "$src" -o "$obj"
done
