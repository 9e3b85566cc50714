package io.xaforward.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The benches compare against torch only on an optimised BLAS: Debian's torch as `./xaf` installs it (with
 * libopenblas0-pthread) maps OpenBLAS, and the reference BLAS that apt installs alone is recognised and refused.
 */
class TorchBlasTest {

    @Test
    void theSystemTorchMultipliesOnOpenBlasAsXafInstallsIt() throws Exception {
        List<String> libs = TorchBlas.requireOptimised("/usr/bin/python3");
        assertTrue(libs.stream().anyMatch(l -> l.contains("openblas")), libs.toString());
    }

    @Test
    void theReferenceBlasIsRefusedAndOptimisedOnesAreNot() {
        assertFalse(TorchBlas.optimised(List.of("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
                "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0")));
        assertFalse(TorchBlas.optimised(List.of()));
        assertTrue(TorchBlas.optimised(List.of("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3",
                "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so")));
        assertTrue(TorchBlas.optimised(List.of("/opt/intel/lib/libmkl_rt.so.2")));
        // an interpreter that cannot answer is an error that names it, not a pass
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> TorchBlas.loaded("/bin/false"));
        assertTrue(e.getMessage().startsWith("could not ask /bin/false which BLAS torch uses"), e.getMessage());
    }
}
