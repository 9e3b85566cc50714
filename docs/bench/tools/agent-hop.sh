#!/bin/sh
# Measures the agent hop (docs/bench/agent-hop.md): two `xaf agent` ranks on loopback addresses (real UDP, one data
# center, wire security crc32c) and docs/bench/tools/agent_hop.py beside each. Run from the repository root after a
# build (./xaf --help builds once). Arguments go to agent_hop.py (e.g. --sizes-mb 1,4,16 --reps 15).
set -eu
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
CP="cli/target/xaf-cli.jar:cli/target/lib/*"
DIR=$(mktemp -d /tmp/xaf-agent-hop.XXXXXX)
cat > "$DIR/cluster.yaml" <<YAML
job: 43
datacenters:
  - {name: a, form: ipv4}
ranks:
  - {rank: 0, datacenter: a, ip: 127.43.0.1}
  - {rank: 1, datacenter: a, ip: 127.43.0.2}
YAML
PIDS=""
for r in 0 1; do
  "$JAVA" --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -cp "$CP" io.xaforward.cli.Main agent --rank $r \
    --interface lo --cluster "$DIR/cluster.yaml" --token 43 --wire-security crc32c --socket "$DIR/rank$r.sock" \
    --shm-bytes $((128 << 20)) > "$DIR/agent$r.log" 2>&1 &
  PIDS="$PIDS $!"
done
for r in 0 1; do
  while [ ! -S "$DIR/rank$r.sock" ]; do sleep 0.2; done
done
for r in 0 1; do
  XAF_AGENT_SOCKET="$DIR/rank$r.sock" RANK=$r WORLD_SIZE=2 PYTHONPATH=python OMP_NUM_THREADS=1 \
    /usr/bin/python3 docs/bench/tools/agent_hop.py "$@" > "$DIR/py$r.out" 2>&1 &
done
wait $PIDS || true
cat "$DIR/py0.out"
rm -rf "$DIR"
