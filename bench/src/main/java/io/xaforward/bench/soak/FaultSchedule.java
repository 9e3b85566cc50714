package io.xaforward.bench.soak;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * When the soak breaks what: a list of faults, each at a number of seconds after the job's first training step.
 * Written as {@code worker1@120,gateway@180,etcd@300} ({@code workerR} kills rank R; {@code worker} alone lets the
 * seed pick the rank), or made from a seed ({@link #standard}): the same seed gives the same schedule, so a soak
 * that found something can be run again with the faults at the same times.
 */
public record FaultSchedule(List<Fault> faults) {
    /** What a fault breaks. */
    public enum Component {
        /** SIGKILL of one rank's JVM; its {@code xaf launch} restarts the local rank from the newest checkpoint. */
        WORKER,
        /** SIGKILL of the XDP gateway process; the soak starts a new one on the same interfaces. */
        GATEWAY,
        /** SIGKILL of the etcd server; the soak starts it again on the same data directory. */
        ETCD;

        public String word() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** One fault: {@code component} (rank {@code rank} for a worker, else -1) at {@code atSeconds} into the training. */
    public record Fault(double atSeconds, Component component, int rank) {
        public Fault {
            if (!(atSeconds >= 0) || Double.isInfinite(atSeconds)) throw new IllegalArgumentException("fault time must be >= 0 seconds, was " + atSeconds);
            if (component == Component.WORKER ? rank < 0 : rank != -1) throw new IllegalArgumentException("a worker fault needs a rank, no other fault has one");
        }

        /** As written in a schedule: {@code worker2@120}, {@code gateway@180}. */
        public String word() {
            return component.word() + (rank >= 0 ? Integer.toString(rank) : "") + "@" + seconds(atSeconds);
        }
    }

    public FaultSchedule {
        faults = faults.stream().sorted(Comparator.comparingDouble(Fault::atSeconds)).toList();
    }

    private static final Pattern ENTRY = Pattern.compile("(worker|gateway|etcd)([0-9]*)@([0-9]+(?:\\.[0-9]+)?)");

    /**
     * Reads {@code worker1@120,gateway@180,etcd@300}; {@code worker@T} picks its rank among {@code worldSize} with
     * {@code seed}. An unknown component, a rank outside the world or a malformed entry is an error naming it.
     */
    public static FaultSchedule parse(String text, int worldSize, long seed) {
        Random random = new Random(seed);
        List<Fault> faults = new ArrayList<>();
        for (String part : text.split(",")) {
            String entry = part.trim();
            if (entry.isEmpty()) continue;
            Matcher m = ENTRY.matcher(entry.toLowerCase(Locale.ROOT));
            if (!m.matches()) {
                throw new IllegalArgumentException("--schedule entry '" + entry + "': expected COMPONENT@SECONDS with"
                        + " COMPONENT worker, workerRANK, gateway or etcd, e.g. worker1@120,gateway@180,etcd@300");
            }
            Component c = Component.valueOf(m.group(1).toUpperCase(Locale.ROOT));
            if (c != Component.WORKER && !m.group(2).isEmpty()) {
                throw new IllegalArgumentException("--schedule entry '" + entry + "': only a worker takes a rank");
            }
            int rank = -1;
            if (c == Component.WORKER) {
                rank = m.group(2).isEmpty() ? random.nextInt(worldSize) : Integer.parseInt(m.group(2));
                if (rank >= worldSize) {
                    throw new IllegalArgumentException("--schedule entry '" + entry + "': rank " + rank + " is outside the world of " + worldSize);
                }
            }
            faults.add(new Fault(Double.parseDouble(m.group(3)), c, rank));
        }
        if (faults.isEmpty()) throw new IllegalArgumentException("--schedule holds no fault");
        return new FaultSchedule(faults);
    }

    /**
     * The default schedule of a soak of {@code seconds}: a worker (a random rank) killed about every 120 s, the gateway
     * about every 180 s, etcd once in the middle third; each time jittered by up to a fifth of its period, so faults
     * do not fall into step with the checkpoints. None falls in the last 30 s, which are left for the job to show it
     * recovered.
     */
    public static FaultSchedule standard(double seconds, int worldSize, long seed) {
        Random random = new Random(seed);
        double last = seconds - 30;
        List<Fault> faults = new ArrayList<>();
        for (double t = 120; t <= last; t += 120) {
            faults.add(new Fault(jitter(t, 24, random), Component.WORKER, random.nextInt(worldSize)));
        }
        for (double t = 180; t <= last; t += 180) faults.add(new Fault(jitter(t, 36, random), Component.GATEWAY, -1));
        if (last > 0) faults.add(new Fault(seconds / 3 + random.nextDouble() * seconds / 3, Component.ETCD, -1));
        if (faults.isEmpty()) throw new IllegalArgumentException("a soak of " + seconds(seconds) + " s is too short for the"
                + " default schedule (its first fault is at 120 s): give --schedule");
        return new FaultSchedule(faults);
    }

    private static double jitter(double t, double spread, Random random) {
        return Math.rint((t + (random.nextDouble() * 2 - 1) * spread) * 10) / 10;
    }

    /** The schedule as {@link #parse} reads it. */
    public String word() {
        return String.join(",", faults.stream().map(Fault::word).toList());
    }

    static String seconds(double s) {
        return s == Math.rint(s) ? Long.toString((long) s) : String.format(Locale.ROOT, "%.1f", s);
    }
}
