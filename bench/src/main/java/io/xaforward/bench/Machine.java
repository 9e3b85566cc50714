package io.xaforward.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A one-line description of the machine a benchmark ran on: CPU model, CPU count, memory, kernel, JVM. */
public final class Machine {
    private Machine() {}

    public static String describe() {
        String cpu = "unknown CPU";
        String mem = "?";
        try {
            for (String l : Files.readAllLines(Path.of("/proc/cpuinfo")))
                if (l.startsWith("model name")) { cpu = l.substring(l.indexOf(':') + 1).strip(); break; }
            for (String l : Files.readAllLines(Path.of("/proc/meminfo")))
                if (l.startsWith("MemTotal")) { mem = (Long.parseLong(l.replaceAll("\\D", "")) / 1024 / 1024) + " GiB"; break; }
        } catch (IOException | RuntimeException ignored) {
            // best effort
        }
        String kernel = "?";
        try {
            kernel = Files.readString(Path.of("/proc/sys/kernel/osrelease")).strip();
        } catch (IOException ignored) {
            // best effort
        }
        return cpu + ", " + Runtime.getRuntime().availableProcessors() + " vCPUs, " + mem + " RAM, Linux " + kernel
                + ", Java " + Runtime.version();
    }
}
