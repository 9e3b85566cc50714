package io.xaforward.cluster;

import io.xaforward.transport.JobSecret;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The keying material of a run its launcher starts every rank of: for an authenticated wire security a fresh job
 * secret (readable by its owner only, never a constant) and the run nonce the launcher picks for all ranks, in two
 * files of the work directory; crc32c needs neither.
 */
public record RunKeys(Path secretFile, Path runNonceFile) {

    /** Launcher: writes a fresh secret and run nonce when {@code mode} needs them; nothing for crc32c. */
    public void issue(WireSecurity mode) throws IOException {
        if (!mode.authenticated()) return;
        JobSecret.generate().writeTo(secretFile);
        Files.writeString(runNonceFile, RunNonce.generate().hex() + "\n");
    }

    /** Worker: sets {@code mode} on {@code config}, with the secret and run nonce the launcher issued when it needs them. */
    public TransportConfig.Builder apply(WireSecurity mode, TransportConfig.Builder config) throws IOException {
        return mode.authenticated()
                ? config.wireSecurity(mode, JobSecret.readFrom(secretFile), RunNonce.parse(Files.readString(runNonceFile)))
                : config.wireSecurity(mode, null, null);
    }
}
