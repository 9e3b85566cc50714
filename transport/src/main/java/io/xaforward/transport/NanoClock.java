package io.xaforward.transport;

/**
 * The transport's source of time, in nanoseconds (a monotonic reading, like {@link System#nanoTime()}). Injected
 * through {@link TransportConfig.Builder#clock} so that tests can run the protocol in simulated time: a long path
 * (20 ms round trips at 1 Gbit/s) is then tested exactly, independently of how fast the test machine is.
 */
@FunctionalInterface
public interface NanoClock {
    NanoClock SYSTEM = System::nanoTime;

    long nanoTime();
}
