package io.xaforward.training;

import java.nio.file.Path;

import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.JniUtils;

/**
 * One place that puts DJL into the mode this project needs before the engine loads: offline (the libtorch native
 * jar is on the class path, nothing may be downloaded), a cache directory inside the project instead of the home
 * directory, a fixed intra-op thread count (bitwise determinism depends on it), and a C heap that keeps the large
 * blocks libtorch frees for the next step ({@link NativeHeap}).
 */
public final class DjlRuntime {

    private DjlRuntime() {
    }

    /**
     * Configures and loads the PyTorch engine. Settings already given as system properties (e.g. by surefire) win.
     *
     * @param defaultCacheDir where libtorch is extracted when DJL_CACHE_DIR is not set
     * @param threads         intra-op threads; used when ai.djl.pytorch.num_threads is not set
     */
    public static synchronized Engine load(Path defaultCacheDir, int threads) {
        System.setProperty("ai.djl.offline", "true");
        if (System.getenv("DJL_CACHE_DIR") == null && System.getProperty("DJL_CACHE_DIR") == null) {
            System.setProperty("DJL_CACHE_DIR", defaultCacheDir.toAbsolutePath().toString());
        }
        if (System.getProperty("ai.djl.pytorch.num_threads") == null) {
            System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        }
        if (System.getProperty("ai.djl.pytorch.num_interop_threads") == null) {
            System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        }
        NativeHeap.keepLargeBlocks();
        return Engine.getEngine("PyTorch");
    }

    /**
     * Changes libtorch's intra-op thread count of this process after the engine has loaded (a bench that measures
     * several thread counts in one JVM), loading it first ({@link #load()}) if nothing has; the inter-op pool can
     * only be sized once, at load.
     */
    public static void intraOpThreads(int threads) {
        if (threads < 1) throw new IllegalArgumentException("intra-op threads must be >= 1, got " + threads);
        load();
        JniUtils.setNumThreads(threads);
    }

    /** libtorch's intra-op thread count in this process. */
    public static int intraOpThreads() {
        return JniUtils.getNumThreads();
    }

    /**
     * Where DJL keeps its native PyTorch library and model cache, relative to the working directory: every launcher
     * and worker uses this one place, so a machine downloads nothing twice.
     */
    public static final Path CACHE_DIR = Path.of(".cache", "djl");

    /** Loads with the cache under {@link #CACHE_DIR} and one thread unless configured otherwise. */
    public static Engine load() {
        return load(CACHE_DIR, 1);
    }
}
