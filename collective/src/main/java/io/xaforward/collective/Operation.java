package io.xaforward.collective;

import io.xaforward.transport.ChunkSink;
import io.xaforward.transport.MessageId;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.TransportTimeoutException;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One collective operation in flight on one rank: posts sends and expects on the transport, and runs every
 * continuation (the next ring step, a local reduction) on the calling thread inside {@link #await}. The transport's
 * event loop only enqueues completions, so it never does arithmetic, and all operation state is touched by one
 * thread (no locks). The operation is done when every message it posted has completed: receives have arrived and
 * sends are acknowledged, so the caller's buffers are free again.
 */
final class Operation {
    private record Message(boolean send, int peer, MessageId id, CompletableFuture<Void> future) {
    }

    private final ReliableTransport transport;
    private final String name;
    private final int localRank;
    private final LinkedBlockingQueue<Runnable> completions = new LinkedBlockingQueue<>();
    private final ArrayList<Message> messages = new ArrayList<>();
    private final long malformedAtStart;
    private int outstanding;

    Operation(ReliableTransport transport, String name) {
        this.transport = transport;
        this.name = name;
        this.localRank = transport.config().localRank();
        this.malformedAtStart = transport.stats().malformedDrops();
    }

    /** Posts a receive from {@code src}; {@code then} (may be null) runs on the caller thread once it arrived. */
    void expect(int src, MessageId id, MemorySegment dest, ChunkSink sink, Runnable then) {
        track(new Message(false, src, id, transport.expect(src, id, dest, sink)), then);
    }

    /** Posts a send to {@code dst}; {@code then} (may be null) runs on the caller thread once it is acknowledged. */
    void send(int dst, MessageId id, MemorySegment data, Runnable then) {
        track(new Message(true, dst, id, transport.send(dst, id, data)), then);
    }

    /** As {@link #send(int, MessageId, MemorySegment, Runnable)}, naming the payload's element type. */
    void send(int dst, MessageId id, MemorySegment data, Runnable then, int elementType) {
        track(new Message(true, dst, id, transport.send(dst, id, data, elementType)), then);
    }

    private void track(Message message, Runnable then) {
        messages.add(message);
        outstanding++;
        message.future.whenComplete((ignored, error) -> completions.add(() -> {
            outstanding--;
            if (error != null) {
                throw failure(message, error);
            }
            if (then != null) {
                then.run();
            }
        }));
    }

    /** Runs continuations until every posted message is done; throws on the first failure or after {@code timeout}. */
    void await(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (outstanding > 0) {
            long left = deadline - System.nanoTime();
            Runnable next;
            try {
                next = left > 0 ? completions.poll(left, TimeUnit.NANOSECONDS) : completions.poll();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollectiveException(-1, name + " on rank " + localRank + " was interrupted", e);
            }
            if (next == null) {
                throw timedOut(timeout);
            }
            next.run();
        }
    }

    private CollectiveException failure(Message message, Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        String what = (message.send ? "sending message " + message.id + " to" : "receiving message " + message.id
                + " from") + " rank " + message.peer;
        if (cause instanceof TransportTimeoutException t) {
            return new CollectiveTimeoutException(new int[]{t.rank()}, name + " on rank " + localRank + " failed "
                    + what + ": " + t.getMessage() + malformedHint(), t);
        }
        return new CollectiveException(message.peer, name + " on rank " + localRank + " failed " + what + ": "
                + cause, cause);
    }

    private CollectiveTimeoutException timedOut(Duration timeout) {
        // Per waiting rank: how many of its messages are unfinished, and the first of them.
        TreeMap<Integer, Integer> unfinished = new TreeMap<>();
        TreeMap<Integer, Message> first = new TreeMap<>();
        for (Message m : messages) {
            if (!m.future.isDone()) {
                unfinished.merge(m.peer, 1, Integer::sum);
                first.putIfAbsent(m.peer, m);
            }
        }
        StringBuilder detail = new StringBuilder();
        for (var entry : unfinished.entrySet()) {
            Message m = first.get(entry.getKey());
            detail.append(detail.isEmpty() ? "" : "; ").append("rank ").append(entry.getKey()).append(": ")
                    .append(entry.getValue()).append(entry.getValue() == 1 ? " message" : " messages")
                    .append(", first ").append(m.send ? "acknowledgement of " : "message ").append(m.id)
                    .append(m.send ? " by rank " : " from rank ").append(m.peer);
        }
        int[] waiting = unfinished.keySet().stream().mapToInt(Integer::intValue).toArray();
        String message = name + " on rank " + localRank + " timed out after " + timeout.toMillis()
                + " ms waiting for rank" + (waiting.length == 1 ? " " : "s ")
                + unfinished.keySet().toString().replaceAll("[\\[\\]]", "") + " (" + detail + ")" + malformedHint();
        return new CollectiveTimeoutException(waiting, message, null);
    }

    private String malformedHint() {
        long malformed = transport.stats().malformedDrops() - malformedAtStart;
        return malformed == 0 ? "" : "; " + malformed + " datagrams were dropped as malformed meanwhile: do all ranks"
                + " pass the same element count?";
    }
}
