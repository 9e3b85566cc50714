package io.xaforward.transport;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * The start-up exchange of ranks started independently ({@code xaf worker}): every rank draws a fresh 16-byte
 * challenge, and every pair of ranks proves to each other that it is up in this exchange by echoing the other's
 * challenge in an authenticated answer (docs/PROTOCOL.md "Start-up exchange"). The run nonce is then {@link
 * RunNonce#combine} of the challenges in rank order.
 *
 * <p>Why challenges: the start-up key is the same in every run of a job (the ranks have no run nonce yet), so any
 * datagram of an earlier exchange still carries a valid tag. Freshness therefore cannot come from the key or from
 * sequence numbers (a replayed datagram with a high sequence number would pin a replay window of the job key and
 * make the real peer's datagrams look old, on every restart); it comes from the challenges, which are new in every
 * exchange: a rank counts a peer as present only on an answer that echoes its own current challenge, which no
 * datagram of an earlier exchange does. Start-up datagrams are checked against no replay window at all; a replayed
 * one at worst makes the rank answer once more.
 *
 * <p>A start-up datagram is an XAF {@code CONTROL} datagram sealed as in {@code mac} mode under the start-up key
 * ({@link RunNonce#STARTUP}), whatever the run's mode; its data ({@value #DATA_LENGTH} bytes):
 * <pre>
 *   kind (u8, 1 = hello) | flags (u8, bit 0: CONFIRMED) | run mode (u8, {@link #modeCode}) | 5 zero bytes
 *   challenge (16): the sender's challenge of this exchange
 *   echo (16):      the receiver's challenge as the sender last heard it (zeros: none yet)
 * </pre>
 * CONFIRMED says that the echo is the receiver's challenge and that the sender has verified it, i.e. the sender
 * counts the receiver as present. A rank answers every authentic hello that does not carry CONFIRMED with its own
 * challenge of the exchange, and the first that does (so both sides learn that they are confirmed); it resends to
 * each peer that has not confirmed it, or that it has not confirmed, with backoff. A hello whose run mode differs from this
 * rank's ends the exchange only when it echoes this rank's current challenge: the start-up key does not depend on the
 * mode, so a hello recorded in an earlier exchange under the other mode still authenticates, and acting on its mode
 * would let anyone who replays it stop the start. Not thread-safe: one thread runs an exchange.
 */
public final class StartupExchange {
    static final int KIND_HELLO = 1;
    static final int FLAG_CONFIRMED = 1;
    static final int DATA_LENGTH = 8 + 2 * RunNonce.LENGTH;
    private static final int CHALLENGE_OFFSET = 8;
    private static final int ECHO_OFFSET = CHALLENGE_OFFSET + RunNonce.LENGTH;
    private static final byte[] NONE = new byte[RunNonce.LENGTH];
    private static final long FIRST_RESEND_NANOS = 100_000_000L;
    private static final long MAX_RESEND_NANOS = 1_000_000_000L;
    /**
     * After this rank has confirmed every peer and while some peer has not said that it confirmed this rank (its
     * last word lost): how long it keeps answering a quiet network before it leaves (three of a peer's longest
     * resend intervals), and at most in all.
     */
    private static final long LINGER_IDLE_NANOS = 3 * MAX_RESEND_NANOS;
    private static final long LINGER_MAX_NANOS = 10_000_000_000L;

    private final int rank;
    private final int world;
    private final int jobId;
    private final int jobToken;
    private final WireSecurity runMode;
    private final AddressBook book;
    private final DatagramPort port;
    private final WireSeal seal;
    private final byte[] challenge;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment tx;
    private final XafHeader txHeader = new XafHeader();
    private final XafHeader rxHeader = new XafHeader();
    private final DatagramHandler handler = this::onDatagram;

    /** The challenge each peer answered this rank's challenge with (null: not confirmed yet). */
    private final byte[][] confirmed;
    /** Whether each peer said CONFIRMED with this rank's current challenge. */
    private final boolean[] confirmedMe;
    private final long[] nextResendNanos;
    private final long[] resendIntervalNanos;
    /** Once every peer is confirmed the challenges are final: later hellos are answered, not taken. */
    private boolean settled;
    private long sequence;
    private long lastHeardNanos;

    private long authFailures;
    private long staleEchoes;
    private long modeMismatches;
    /** Hellos of another mode that did not echo this exchange's challenge: replayed, late, or a peer's first word. */
    private long unprovenModeHellos;
    private int mismatchedMode = -1;
    private long otherDrops;

    /**
     * @param runMode   the run's wire security (mac or encrypt): carried in every hello, so ranks with another mode
     *                  fail the exchange naming it instead of the run's first collective
     * @param challenge this exchange's fresh challenge ({@link RunNonce#randomBytes()})
     */
    StartupExchange(int rank, int world, int jobId, int jobToken, WireSecurity runMode, JobSecret secret,
                    AddressBook book, DatagramPort port, byte[] challenge) {
        if (!runMode.authenticated()) {
            throw new IllegalArgumentException("wire security " + runMode.configName() + " has no run keys to agree");
        }
        if (world < 1 || rank < 0 || rank >= world || challenge.length != RunNonce.LENGTH) {
            throw new IllegalArgumentException("rank " + rank + " of " + world + ", challenge of " + challenge.length
                    + " bytes");
        }
        for (int r = 0; r < world; r++) {
            if (r != rank && !book.contains(r)) {
                throw new IllegalArgumentException("rank " + r + " of " + world + " is not in the address book");
            }
        }
        this.rank = rank;
        this.world = world;
        this.jobId = jobId;
        this.jobToken = jobToken;
        this.runMode = runMode;
        this.book = book;
        this.port = port;
        this.challenge = challenge.clone();
        int datagram = XafHeader.LENGTH + DATA_LENGTH + WireSeal.TRAILER_BYTES;
        if (datagram > port.maxDatagramLength()) {
            throw new IllegalArgumentException("the port's datagrams are shorter than a start-up datagram of "
                    + datagram + " bytes");
        }
        // mac under the start-up key whatever the run's mode: nothing here is secret (the challenges only salt the
        // run's keys, which the job secret makes). mac is GMAC, and the start-up key is the same in every exchange
        // of the job, so a nonce (src, dst, seq) must not repeat across exchanges: the counter starts at a fresh
        // random salt below 2^62 (docs/PROTOCOL.md, "Sequence numbers and GCM nonces"); from 0 every exchange
        // would reuse the last one's nonces, and two GMAC tags under one nonce give away the authentication key.
        this.seal = WireSeal.of(WireSecurity.MAC, secret, jobId, RunNonce.STARTUP, port.maxDatagramLength());
        this.sequence = WireSeal.initialSequence(new SecureRandom());
        this.tx = arena.allocate(datagram, 64);
        this.confirmed = new byte[world][];
        this.confirmedMe = new boolean[world];
        this.nextResendNanos = new long[world];
        this.resendIntervalNanos = new long[world];
        Arrays.fill(resendIntervalNanos, FIRST_RESEND_NANOS);
    }

    /**
     * Runs the exchange over {@code port} (which stays open for the caller) until this rank has confirmed every
     * other rank of {@code world}, answers its peers a little longer so that they can confirm it too, and returns
     * the run nonce.
     *
     * @throws IllegalStateException when a rank does not answer within {@code timeout} (naming the ranks and what
     *                               was dropped) or uses another wire security mode
     */
    public static RunNonce agree(int rank, int world, int jobId, int jobToken, WireSecurity runMode, JobSecret secret,
                                 AddressBook book, DatagramPort port, Duration timeout) {
        StartupExchange exchange = new StartupExchange(rank, world, jobId, jobToken, runMode, secret, book, port,
                RunNonce.randomBytes());
        try {
            return exchange.run(timeout);
        } finally {
            exchange.close();
        }
    }

    RunNonce run(Duration timeout) {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        while (!settled) {
            long now = System.nanoTime();
            if (now - deadline >= 0) {
                throw new IllegalStateException(timeoutMessage(timeout));
            }
            if (mismatchedMode >= 0) {
                throw new IllegalStateException("start-up exchange: a peer runs wire security "
                        + modeName(mismatchedMode) + ", this rank " + runMode.configName()
                        + ": every rank needs the same --wire-security");
            }
            resendDue(now);
            pollAndWait(Math.min(FIRST_RESEND_NANOS / 4, deadline - now));
        }
        RunNonce nonce = runNonce();
        // A peer whose answer from us was lost resends: keep answering until every peer has confirmed us, or the
        // network has been quiet for a while (a peer that has moved on no longer sends here), then leave.
        long lingerEnd = System.nanoTime() + LINGER_MAX_NANOS;
        lastHeardNanos = System.nanoTime();
        while (!everyPeerConfirmedMe()) {
            long now = System.nanoTime();
            if (now - lingerEnd >= 0 || now - lastHeardNanos >= LINGER_IDLE_NANOS) break;
            pollAndWait(FIRST_RESEND_NANOS / 4);
        }
        return nonce;
    }

    /** The run nonce of the confirmed challenges (this rank's own at its slot). */
    RunNonce runNonce() {
        List<byte[]> challenges = new ArrayList<>(world);
        for (int r = 0; r < world; r++) {
            challenges.add(r == rank ? challenge : confirmed[r]);
        }
        return RunNonce.combine(jobId, challenges);
    }

    private void resendDue(long now) {
        boolean sent = false;
        for (int r = 0; r < world; r++) {
            if (r == rank || (confirmed[r] != null && confirmedMe[r]) || now - nextResendNanos[r] < 0) continue;
            sendHello(r, confirmed[r] != null ? confirmed[r] : NONE, confirmed[r] != null);
            nextResendNanos[r] = now + resendIntervalNanos[r];
            resendIntervalNanos[r] = Math.min(MAX_RESEND_NANOS, resendIntervalNanos[r] * 2);
            sent = true;
        }
        if (sent) port.flush();
    }

    private void pollAndWait(long waitNanos) {
        if (poll() == 0 && waitNanos > 0) {
            if (port.canAwaitReceive()) {
                port.awaitReceive(waitNanos);
            } else {
                LockSupport.parkNanos(Math.min(waitNanos, 1_000_000));
            }
        }
    }

    /** Handles what the port has now; returns how many datagrams it had. */
    int poll() {
        int n = port.poll(handler, 64);
        port.flush(); // answers sent by the handler
        return n;
    }

    private void onDatagram(MemorySegment segment, long offset, int length) {
        if (length < XafHeader.LENGTH) {
            otherDrops++;
            return;
        }
        XafHeader h = rxHeader.wrap(segment, offset);
        int payloadLength = h.payloadLength();
        if (h.magic() != (XafHeader.MAGIC & 0xFFFF) || h.version() != XafHeader.VERSION
                || h.hdrLen() != XafHeader.LENGTH || XafHeader.LENGTH + payloadLength > length
                || h.jobId() != jobId || h.jobToken() != jobToken || h.dstRank() != rank
                || h.type() != MessageType.CONTROL.code()) {
            otherDrops++; // not ours, or the run's traffic of a peer that has moved on
            return;
        }
        int src = h.srcRank();
        if (src >= world || src == rank || !port.receivedFrom(book.peer(src))) {
            otherDrops++;
            return;
        }
        if (seal.open(segment, offset, payloadLength) != WireSeal.OPENED) {
            authFailures++;
            return;
        }
        MemorySegment data = seal.dataSegment();
        long at = seal.dataOffset();
        if (seal.dataLength() != DATA_LENGTH || data.get(ValueLayout.JAVA_BYTE, at) != KIND_HELLO) {
            otherDrops++;
            return;
        }
        lastHeardNanos = System.nanoTime();
        int mode = Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, at + 2));
        boolean theyConfirmed = (data.get(ValueLayout.JAVA_BYTE, at + 1) & FLAG_CONFIRMED) != 0;
        byte[] theirs = data.asSlice(at + CHALLENGE_OFFSET, RunNonce.LENGTH).toArray(ValueLayout.JAVA_BYTE);
        byte[] echo = data.asSlice(at + ECHO_OFFSET, RunNonce.LENGTH).toArray(ValueLayout.JAVA_BYTE);
        boolean answersUs = MessageDigest.isEqual(echo, challenge);
        if (mode != modeCode(runMode)) {
            // The start-up key is the same in every exchange and every mode of the job, so a hello of an earlier
            // exchange run under the other mode still authenticates: its mode says nothing about this exchange until
            // it echoes this exchange's challenge. Only then is it a peer that runs another mode now, and fatal.
            if (answersUs) {
                modeMismatches++;
                mismatchedMode = mode;
            } else {
                unprovenModeHellos++;
                // Answered with our challenge all the same: a peer that really runs another mode echoes it back and
                // so learns of the mismatch (and we of it) from a hello bound to each side's current challenge; a
                // replayed one is answered once per arrival, as any other.
                sendHello(src, theirs, false);
            }
            return;
        }
        boolean newlyConfirmedMe = false;
        if (answersUs) {
            // Authentic and bound to this exchange's challenge: the peer is up in this exchange with `theirs`.
            if (!settled) {
                confirmed[src] = theirs;
                settled = allConfirmed();
            }
            if (theyConfirmed && !confirmedMe[src]) {
                confirmedMe[src] = true;
                newlyConfirmedMe = true;
            }
        } else if (!Arrays.equals(echo, NONE)) {
            staleEchoes++; // an answer to another challenge: an earlier exchange's, replayed or late
        }
        if (!(answersUs && theyConfirmed) || newlyConfirmedMe) {
            // The peer still needs an answer that echoes its challenge (to confirm us), or ours (to be confirmed);
            // or it has just confirmed us, and our CONFIRMED in return lets it leave without lingering. Once each
            // side has both, nothing answers anything: no ping-pong.
            sendHello(src, theirs, confirmed[src] != null && Arrays.equals(confirmed[src], theirs));
            resendIntervalNanos[src] = FIRST_RESEND_NANOS;
        }
    }

    /** The run's wire security as a hello carries it (docs/PROTOCOL.md "Start-up exchange"). */
    static int modeCode(WireSecurity mode) {
        return switch (mode) {
            case CRC32C -> 0;
            case MAC -> 1;
            case ENCRYPT -> 2;
        };
    }

    private static String modeName(int code) {
        for (WireSecurity m : WireSecurity.values()) {
            if (modeCode(m) == code) return m.configName();
        }
        return "of code " + code;
    }

    private boolean allConfirmed() {
        for (int r = 0; r < world; r++) {
            if (r != rank && confirmed[r] == null) return false;
        }
        return true;
    }

    private boolean everyPeerConfirmedMe() {
        for (int r = 0; r < world; r++) {
            if (r != rank && !confirmedMe[r]) return false;
        }
        return true;
    }

    private void sendHello(int to, byte[] echo, boolean confirmedEcho) {
        txHeader.wrap(tx, 0).init()
                .type(MessageType.CONTROL.code()).flags(seal.flags())
                .networkId(book.networkId(to)).jobId(jobId).jobToken(jobToken)
                .srcRank(rank).dstRank(to).chunkCount(1)
                .payloadLength(DATA_LENGTH + seal.trailerLength());
        long at = XafHeader.LENGTH;
        tx.asSlice(at, 8).fill((byte) 0);
        tx.set(ValueLayout.JAVA_BYTE, at, (byte) KIND_HELLO);
        tx.set(ValueLayout.JAVA_BYTE, at + 1, (byte) (confirmedEcho ? FLAG_CONFIRMED : 0));
        tx.set(ValueLayout.JAVA_BYTE, at + 2, (byte) modeCode(runMode));
        MemorySegment.copy(challenge, 0, tx, ValueLayout.JAVA_BYTE, at + CHALLENGE_OFFSET, RunNonce.LENGTH);
        MemorySegment.copy(echo, 0, tx, ValueLayout.JAVA_BYTE, at + ECHO_OFFSET, RunNonce.LENGTH);
        // The sequence number is only sealed, never checked: freshness is the challenges' business.
        seal.seal(tx, 0, DATA_LENGTH, sequence++);
        port.send(tx, 0, XafHeader.LENGTH + DATA_LENGTH + seal.trailerLength(), book.peer(to));
    }

    private String timeoutMessage(Duration timeout) {
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            if (r != rank && confirmed[r] == null) missing.add(r);
        }
        StringBuilder sb = new StringBuilder("start-up exchange: rank" + (missing.size() == 1 ? " " : "s ") + missing
                + " did not answer this rank's challenge within " + ReliableTransport.format(timeout));
        if (authFailures > 0) {
            sb.append("; ").append(authFailures).append(" datagrams failed authentication (wire security ")
                    .append(runMode.configName()).append("): the peers use another job secret; every rank needs")
                    .append(" the same --secret-file");
        }
        if (staleEchoes > 0) {
            sb.append("; ").append(staleEchoes).append(" answers echoed another challenge (an earlier exchange's,")
                    .append(" replayed or late), refused");
        }
        if (unprovenModeHellos > 0) {
            sb.append("; ").append(unprovenModeHellos).append(" hellos of another wire security mode did not echo")
                    .append(" this rank's challenge (an earlier exchange's, replayed or late), ignored");
        }
        return sb.toString();
    }

    boolean confirmed(int peer) { return confirmed[peer] != null; }
    boolean confirmedMe(int peer) { return confirmedMe[peer]; }
    byte[] challenge() { return challenge.clone(); }
    long authFailures() { return authFailures; }
    long staleEchoes() { return staleEchoes; }
    long modeMismatches() { return modeMismatches; }
    long unprovenModeHellos() { return unprovenModeHellos; }
    long otherDrops() { return otherDrops; }

    void close() {
        arena.close();
    }
}
