package io.xaforward.testbed.wan;

import io.xaforward.testbed.WanImpairment;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

/**
 * The WAN delay line as a process of its own, started by {@code topo up} inside the WAN namespace, so that its CPU
 * time is its own (/proc/PID) and it can be placed on a CPU like the gateways. Prints {@value #READY} with its pid
 * once both ports are open; writes its counters as {@code name value} lines to the counters file every second and
 * when it stops (SIGTERM).
 *
 * <p>Arguments: {@code --namespace NS} (recorded only, so that {@code topo down} finds the process of a namespace),
 * {@code --gateway-port DEV --dc-port DEV --mtu N --ring-bytes N --seed N --counters FILE}, and the impairment as
 * {@link WanImpairment#delayLineArguments()} writes it.
 */
public final class DelayLineMain {
    /** The line the process prints once it forwards; followed by {@code pid=N}. */
    public static final String READY = "DELAY-LINE READY";

    private DelayLineMain() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) throw new IllegalArgumentException("expected --option, got '" + args[i] + "'");
            a.put(args[i].substring(2), args[i + 1]);
        }
        if (args.length % 2 != 0) throw new IllegalArgumentException("option '" + args[args.length - 1] + "' has no value");
        WanImpairment.BurstLoss burst = null;
        if (a.containsKey("burst")) {
            String[] b = a.get("burst").split(",");
            burst = new WanImpairment.BurstLoss(Double.parseDouble(b[0]), Double.parseDouble(b[1]), Double.parseDouble(b[2]),
                    Double.parseDouble(b[3]));
        }
        WanImpairment impairment = new WanImpairment(Long.parseLong(required(a, "delay-ns")), Long.parseLong(required(a, "jitter-ns")),
                Double.parseDouble(required(a, "loss")), burst, Double.parseDouble(required(a, "reorder")));
        Path countersFile = Path.of(required(a, "counters"));
        DelayLine line = new DelayLine(required(a, "gateway-port"), required(a, "dc-port"), Integer.parseInt(required(a, "mtu")),
                impairment, Long.parseLong(required(a, "ring-bytes")), Long.parseLong(a.getOrDefault("seed", Long.toString(System.nanoTime()))));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            line.stop();
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Map<String, Long> last = line.counters();
            writeCounters(countersFile, last);
            System.out.println("DELAY-LINE STOPPED " + last);
            line.close();
        }));
        Thread reporter = Thread.ofPlatform().daemon().name("counters").start(() -> {
            while (true) {
                writeCounters(countersFile, line.counters());
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        System.out.println(READY + " pid=" + ProcessHandle.current().pid());
        System.out.flush();
        try {
            line.run();
        } finally {
            reporter.interrupt();
            reporter.join(2000); // it must not read the line while the shutdown hook closes it
            stopped.countDown(); // the shutdown hook writes the last counters, then closes the line
        }
    }

    private static String required(Map<String, String> a, String key) {
        String v = a.get(key);
        if (v == null) throw new IllegalArgumentException("--" + key + " is required");
        return v;
    }

    private static void writeCounters(Path file, Map<String, Long> counters) {
        try {
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, counters.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                    .collect(Collectors.joining("\n", "", "\n")));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            System.out.println("cannot write counters to " + file + ": " + e.getMessage());
        }
    }
}
