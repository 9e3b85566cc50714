#!/usr/bin/env bash
# Interleaved before/after runs of the Java trainer's step in `xaf bench compute`, one JVM per run:
#   before: a build of BASE_CLI_DIR (xaf-cli.jar + lib/ of the commit before the heap cuts), glibc's default heap;
#   after:  this checkout's build, with the GLIBC_TUNABLES that ./xaf sets for training.
# Usage: docs/bench/tools/compute-before-after.sh BASE_CLI_DIR OUT_DIR [ALTERNATIONS]
# Then: docs/bench/tools/compute-before-after.py OUT_DIR > docs/bench/compute-before-after.md
set -euo pipefail
base=$1 out=$2 n=${3:-3}
cd "$(dirname "$0")/../../.."
java=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
export DJL_CACHE_DIR=${DJL_CACHE_DIR:-$PWD/.cache/djl}
args=(bench compute --trainers 'java,java overlap' --threads 1 --runs 1 --steps 4 --warmup 2)
for i in $(seq 1 "$n"); do
  env -u GLIBC_TUNABLES "$java" --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -cp "$base/xaf-cli.jar:$base/lib/*" \
    io.xaforward.cli.Main "${args[@]}" --out "$out/before-$i" | grep ms/step
  GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647 "$java" --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC \
    -cp "cli/target/xaf-cli.jar:cli/target/lib/*" io.xaforward.cli.Main "${args[@]}" --out "$out/after-$i" | grep ms/step
done
