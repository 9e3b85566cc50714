#!/usr/bin/env bash
# Interleaved `xaf demo --steps 20` runs: before = a build (xaf-cli.jar + lib/) of the commit before the heap cuts,
# started without GLIBC_TUNABLES; after = this checkout through ./xaf. Needs root (the demo's namespaces and XDP).
# Usage: docs/bench/tools/demo-before-after.sh BASE_CLI_DIR OUT_DIR [ALTERNATIONS]
set -uo pipefail
base=$1 out=$2 n=${3:-2}
cd "$(dirname "$0")/../../.."
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64} XAF_HOME=$PWD XAF_CWD=$PWD DJL_CACHE_DIR=${DJL_CACHE_DIR:-$PWD/.cache/djl}
mkdir -p "$out"
for i in $(seq 1 "$n"); do
  for side in before after; do
    echo "== $side $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ $side = before ]; then
      env -u GLIBC_TUNABLES "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC \
        -cp "$base/xaf-cli.jar:$base/lib/*" io.xaforward.cli.Main demo --steps 20 --out "$out/$side-$i" > "$out/$side-$i.log" 2>&1
    else
      ./xaf demo --steps 20 --out "$out/$side-$i" > "$out/$side-$i.log" 2>&1
    fi
    grep -E "validation loss  |time per step|compute / comm" "$out/$side-$i.log"
  done
done
