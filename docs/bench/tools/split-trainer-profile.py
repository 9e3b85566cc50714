#!/usr/bin/python3
"""Splits a perf profile of the Java trainer (`perf record -e cpu-clock -g` around `xaf bench compute --trainers java`,
JVM run with -XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit) into what the step spends its CPU on, by the sampled
(leaf) frame of every thread of the process:

  usage: split-trainer-profile.py PERF.DATA

libtorch kernels (libtorch_cpu.so, MKL inside it), JNI/DJL (libdjl_torch.so, DJL's Java code, JNI stubs), copies
(memcpy/memset in libc, FlatGradients.gather), optimizer (AdamW.step, the gradient norm), Java other (JIT-compiled
code of the trainer and the bench, the interpreter), JVM runtime (libjvm on the training thread), JIT compiler
threads, GC threads, kernel (page faults, scheduling), other.
"""
import collections
import subprocess
import sys


def category(comm, dso, sym):
    if comm.startswith("C1 Compiler") or comm.startswith("C2 Compiler"):
        return "JIT compiler threads"
    if comm.startswith("GC Thread") or comm.startswith("VM Thread") or comm.startswith("GC "):
        return "GC and VM threads"
    if "kernel.kallsyms" in dso:
        return "kernel (page faults, scheduling)"
    if "libtorch_cpu" in dso or "libc10" in dso or "libgomp" in dso:
        return "libtorch kernels"
    if "libdjl_torch" in dso or sym.startswith("ai.djl") or " ai.djl." in sym:
        return "JNI and DJL"
    if "AdamW" in sym or "sumOfSquares" in sym:
        return "optimizer (AdamW, gradient norm)"
    if "FlatGradients.gather" in sym or ("libc" in dso and ("memcpy" in sym or "memset" in sym or "memmove" in sym)):
        return "copies (gradient gather, memcpy/memset)"
    if "libjvm" in dso:
        return "JVM runtime on the training thread"
    if dso.startswith("[JIT]") or "perf-" in dso:
        return "Java other (bench, trainer glue, interpreter)"
    return "other (" + dso + ")"


def main():
    out = subprocess.run(["perf", "script", "-i", sys.argv[1], "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    comm, leaf_next = "", False
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith((" ", "\t")):  # a sample's header: the thread's name; its leaf frame follows
            comm, leaf_next = line.strip(), True
            continue
        if leaf_next:
            rest = line.strip().split(" ", 1)[1] if " " in line.strip() else ""
            dso = rest[rest.rfind("(") + 1:rest.rfind(")")].split("/")[-1] if "(" in rest else ""
            sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest
            if "[JIT]" in rest:
                dso = "[JIT]"
            counts[category(comm, dso, sym)] += 1
            leaf_next = False
    total = sum(counts.values())
    print("| where | share of the process's samples |\n|---|---:|")
    for name, n in counts.most_common():
        print(f"| {name} | {100 * n / total:.1f}% |")
    print(f"\n{total} samples")


if __name__ == "__main__":
    main()
