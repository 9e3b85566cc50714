package io.xaforward.cli;

import io.xaforward.common.EtcdSecurity;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/**
 * How {@code xaf worker --etcd} and {@code xaf gateway --registry} reach an etcd that wants TLS and credentials
 * (docs/DEPLOY.md shows the etcd side). Relative paths are taken from the directory xaf was started in.
 */
final class EtcdOptions {
    @Option(names = "--etcd-ca", paramLabel = "FILE", description = "CA certificate (PEM) that etcd's server certificate must chain to; with an https:// endpoint")
    Path ca;

    @Option(names = "--etcd-cert", paramLabel = "FILE", description = "client certificate (PEM, no common name) for etcd's --client-cert-auth; with --etcd-key")
    Path cert;

    @Option(names = "--etcd-key", paramLabel = "FILE", description = "the client certificate's key (PEM PKCS#8, mode 600)")
    Path key;

    @Option(names = "--etcd-user", paramLabel = "NAME", description = "etcd user (etcd auth enabled); with --etcd-password-file")
    String user;

    @Option(names = "--etcd-password-file", paramLabel = "FILE", description = "file holding the etcd user's password (first line, mode 600)")
    Path passwordFile;

    /** Whether any of these options was given (they make sense only with an etcd endpoint). */
    boolean given() {
        return ca != null || cert != null || key != null || user != null || passwordFile != null;
    }

    EtcdSecurity security() {
        return new EtcdSecurity(resolve(ca), resolve(cert), resolve(key), user, resolve(passwordFile));
    }

    private static Path resolve(Path p) {
        return p == null ? null : UserPaths.resolve(p.toString());
    }
}
