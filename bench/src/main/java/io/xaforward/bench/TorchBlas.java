package io.xaforward.bench;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Which BLAS a Python's torch multiplies its matrices with. Debian's python3-torch links {@code libblas.so.3}, and apt
 * fills that with the reference BLAS (libblas3) unless an optimised one is installed: on it the benches' torch step
 * took 930-1000 ms where OpenBLAS takes 48-56 ms (field notes, 2026-12-07). A torch peer on the reference BLAS is a
 * peer slowed about 19x, so the benches refuse to compare against one.
 */
public final class TorchBlas {
    /** The libraries whose names mark an optimised BLAS. */
    private static final List<String> OPTIMISED = List.of("openblas", "mkl", "blis", "atlas");
    /** What a torch process maps that is a BLAS, one path a line (its own memory map, read from inside it). */
    private static final String PROBE = "import torch\n"
            + "torch.ones(2, 2) @ torch.ones(2, 2)\n"
            + "print('\\n'.join(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l.lower() or 'mkl' in l.lower()})))\n";

    /** Interpreters already found on an optimised BLAS, with what they map: every Gloo job of a bench asks again. */
    private static final Map<String, List<String>> VERIFIED = new ConcurrentHashMap<>();

    private TorchBlas() {}

    /** The BLAS libraries {@code python}'s torch has mapped, as paths. */
    public static List<String> loaded(String python) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(python, "-c", PROBE).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException("could not ask " + python + " which BLAS torch uses: " + out.strip());
        }
        return out.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
    }

    /** Whether {@code libraries} (from {@link #loaded}) include an optimised BLAS. */
    public static boolean optimised(List<String> libraries) {
        return libraries.stream().anyMatch(l -> OPTIMISED.stream().anyMatch(l.toLowerCase()::contains));
    }

    /**
     * Fails with what to install when {@code python}'s torch runs on the reference BLAS; returns the libraries it
     * runs on (for the report) otherwise, asking each interpreter once per process.
     */
    public static List<String> requireOptimised(String python) throws IOException, InterruptedException {
        List<String> known = VERIFIED.get(python);
        if (known != null) return known;
        List<String> libs = loaded(python);
        if (!optimised(libs)) {
            throw new IllegalStateException("torch in " + python + " multiplies matrices on the reference BLAS (" + String.join(", ", libs)
                    + "), about 19x slower than OpenBLAS: a torch peer on it would be compared slowed. Install an optimised BLAS"
                    + " (Debian: apt-get install libopenblas0-pthread, which ./xaf installs; it takes libblas.so.3 over by"
                    + " alternatives) and run the bench again");
        }
        VERIFIED.put(python, libs);
        return libs;
    }
}
