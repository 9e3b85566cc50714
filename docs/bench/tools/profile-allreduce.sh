#!/usr/bin/env bash
# Profiles one all-reduce job of `xaf bench allreduce` (default: 64 MB hierarchical, xdp gateway, crc32c, UDP
# endpoints, four ranks on topologies/two-dc.yaml, placed as the bench always places it) with perf (kernel and JIT
# frames) and JFR (the workers' Java samples), and splits the CPU into the table of docs/TRANSPORT.md
# ("Where an endpoint's CPU goes"). Run from the repository root, as root, on a built tree (./xaf builds it):
#
#   docs/bench/tools/profile-allreduce.sh [OUT_DIR] [extra xaf bench allreduce options, e.g. --wire-security mac]
#
# OUT_DIR gets: bench/ (the bench's own report), perf.data, perf.txt (perf script), folded.txt, flame.svg,
# split.md (the table), jfr/*.jfr (one per JVM) and jfr-top.txt (the workers' hottest Java leaf frames).
# The worker JVMs run with -XX:+PreserveFramePointer (so perf can walk JIT frames; it costs a few percent) and
# write their perf maps (/tmp/perf-PID.map) when they exit.
set -euo pipefail
OUT=${1:-xaf-bench/profile-$(date -u +%Y%m%d-%H%M%S)}
shift || true
SETTLE=${PROFILE_SETTLE_SECONDS:-14}   # JVM start, rendezvous and the warm-up all-reduce before perf starts
RECORD=${PROFILE_SECONDS:-10}
mkdir -p "$OUT/jfr"
OUT=$(cd "$OUT" && pwd)
./xaf --help >/dev/null   # build first, without the profiling options below
export JAVA_TOOL_OPTIONS="-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:+PreserveFramePointer \
-XX:StartFlightRecording=filename=$OUT/jfr/jvm-%p.jfr,settings=profile"
./xaf bench allreduce --topology topologies/two-dc.yaml --modes xdp --wire-security crc32c --sizes 64 --runs 1 \
  --iterations 20 --algorithms hierarchical --goodput-topology none --out "$OUT/bench" "$@" >"$OUT/bench.log" 2>&1 &
BENCH=$!
workers() { pgrep -f 'io.xaforward.bench.allreduce.AllReduceWorkerMain' | tr '\n' ',' | sed 's/,$//'; }
for _ in $(seq 240); do [ "$(workers | tr ',' '\n' | grep -c .)" -ge 4 ] && break; sleep 0.5; done
WORKERS=$(workers)
echo "$WORKERS" >"$OUT/workers.txt"
[ -n "$WORKERS" ] || { echo "no workers started; see $OUT/bench.log" >&2; exit 1; }
sleep "$SETTLE"
NETCPU=$(ls -t /tmp/xaf-bench-allreduce-*/job-*/network-cpu.properties | head -1)
cp "$NETCPU" "$OUT/network-cpu.properties"
T0=$(date -u +%H:%M:%S)
perf record -e cpu-clock -F 999 -a -g -o "$OUT/perf.data" -- sleep "$RECORD" 2>"$OUT/perf-record.log"
T1=$(date -u +%H:%M:%S)
wait "$BENCH"
unset JAVA_TOOL_OPTIONS
prop() { grep "^networkCpu.$1=" "$OUT/network-cpu.properties" | cut -d= -f2 | sed 's/\\//g'; }
perf script -F comm,pid,tid,cpu,event,ip,sym,dso -i "$OUT/perf.data" 2>/dev/null >"$OUT/perf.txt"
# The bench's own figures per datagram event (endpoint, fabric, gateway), from its JSON report.
read -r EUS FUS GUS < <(/usr/bin/python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["cells"][0]
print(c.get("endpoint_cpu_us_per_datagram", 0), c.get("fabric_cpu_us_per_datagram", 0), c.get("gateway_cpu_us_per_datagram", 0))' \
  "$OUT/bench/allreduce.json")
/usr/bin/python3 "$(dirname "$0")/perfsplit.py" --workers "$WORKERS" --fabric "$(prop fabricThreads)" \
  --gateway "$(prop gatewayThreads)" --gateway-procs "$(prop gatewayProcesses)" \
  --endpoint-us "$EUS" --fabric-us "$FUS" --gateway-us "$GUS" \
  --jfr $(for p in ${WORKERS//,/ }; do echo "$OUT/jfr/jvm-$p.jfr"; done) --window "$T0-$T1" \
  --folded "$OUT/folded.txt" --svg "$OUT/flame.svg" \
  --title "xaf bench allreduce 64 MB hierarchical xdp crc32c, 4 ranks, $(date -u +%F)" <"$OUT/perf.txt" | tee "$OUT/split.md"
# The transport threads' hottest Java frames (JFR's leaf frames, inlined methods included), for the record.
for p in ${WORKERS//,/ }; do jfr print --events jdk.ExecutionSample "$OUT/jfr/jvm-$p.jfr"; done \
  | grep -A1 'stackTrace = \[' | grep -v 'stackTrace\|^--' | sed 's/ *line:.*//' | sort | uniq -c | sort -rn | head -25 \
  >"$OUT/jfr-top.txt"
