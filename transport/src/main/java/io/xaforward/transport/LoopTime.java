package io.xaforward.transport;

/**
 * The event loop's time, read from the injected {@link NanoClock} once per pass and shared by the sender, the
 * receiver and the timers, so that everything one pass does is stamped alike (and a simulated clock drives all of it).
 */
final class LoopTime {
    private final NanoClock clock;
    /** Nanoseconds at the start of the current pass. */
    long now;

    LoopTime(NanoClock clock) {
        this.clock = clock;
        this.now = clock.nanoTime();
    }

    /** Starts a pass: reads the clock once. */
    long advance() {
        now = clock.nanoTime();
        return now;
    }
}
