package io.xaforward.transport;

import io.xaforward.common.ConfigWord;

import java.util.Locale;

/**
 * How every XAF datagram of a job is protected end to end (docs/PROTOCOL.md, "Wire security"). Every mode covers the
 * XAF header (all fields but hop_limit, payload_sum and the CRC itself) and the payload with the CRC32C, so a bit
 * flip anywhere between the two ranks, inside a gateway included, is caught.
 */
public enum WireSecurity implements ConfigWord {
    /** CRC32C over header and payload: catches corruption, not forgery. Needs no secret. */
    CRC32C,
    /** As CRC32C, plus a 128-bit AES-256-GMAC tag and a sequence number (replay window) keyed by the job secret. */
    MAC,
    /** As MAC, but the payload is encrypted with AES-256-GCM (for links that leave the building). */
    ENCRYPT;

    /** The word for this mode on command lines and in job files: crc32c, mac or encrypt. */
    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Reads a {@link #configName()} ({@link ConfigWord#parse}). */
    public static WireSecurity fromName(String name) {
        return ConfigWord.parse(WireSecurity.class, "wire security", name);
    }

    /**
     * Fails unless this mode has the keys it derives its wire keys from: the job secret and the run nonce for an
     * {@link #authenticated()} mode, nothing for crc32c.
     */
    public void requireKeys(JobSecret secret, RunNonce runNonce) {
        if (!authenticated()) return;
        if (secret == null) throw new IllegalArgumentException("wire security " + configName() + " needs the job secret");
        if (runNonce == null) throw new IllegalArgumentException("wire security " + configName() + " needs the run nonce");
    }

    /** True when datagrams carry a tag and a sequence number and need the job secret. */
    public boolean authenticated() {
        return this != CRC32C;
    }
}
