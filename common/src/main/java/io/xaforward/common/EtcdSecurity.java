package io.xaforward.common;


import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How to reach an etcd that wants TLS and credentials: the CA that signed etcd's server certificate, a client
 * certificate and key (etcd's {@code --client-cert-auth}), and a user whose password is in a file (etcd's
 * {@code auth enable}). Every part is optional; all files are PEM as openssl and etcd's own tooling write them, the
 * key in PKCS#8 ({@code BEGIN PRIVATE KEY}). The key and password files must be private to their owner; the CA and
 * client certificate may be readable by others but writable by their owner only; and no directory above any of them
 * may be writable by others ({@link PrivateFiles}).
 *
 * @param caFile       CA certificate(s) that etcd's server certificate must chain to; null: the JDK's default trust
 * @param certFile     client certificate (with {@code keyFile}), or null
 * @param keyFile      the client certificate's private key, or null
 * @param user         etcd user name, or null for no authentication
 * @param passwordFile file holding the user's password (first line), or null
 */
public record EtcdSecurity(Path caFile, Path certFile, Path keyFile, String user, Path passwordFile) {
    /** Plain http, no credentials. */
    public static final EtcdSecurity NONE = new EtcdSecurity(null, null, null, null, null);

    public EtcdSecurity {
        if ((certFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException("an etcd client certificate needs its key and the key its certificate"
                    + " (give both, or neither)");
        }
        if ((user == null) != (passwordFile == null)) {
            throw new IllegalArgumentException("an etcd user needs a password file and a password file a user (give both, or neither)");
        }
    }

    /** Whether anything about TLS was given (then the endpoint must be https). */
    public boolean tls() {
        return caFile != null || certFile != null;
    }

    /** The TLS context: the given CA (or the JDK's defaults) and the client certificate, if any. */
    SSLContext sslContext() {
        try {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            if (caFile == null) {
                tmf.init((KeyStore) null);
            } else {
                KeyStore trust = KeyStore.getInstance("PKCS12");
                trust.load(null, null);
                int i = 0;
                for (Certificate c : certificates(caFile, "etcd CA file")) trust.setCertificateEntry("ca" + i++, c);
                tmf.init(trust);
            }
            KeyManagerFactory kmf = null;
            if (certFile != null) {
                Collection<? extends Certificate> chain = certificates(certFile, "etcd client certificate");
                KeyStore keys = KeyStore.getInstance("PKCS12");
                keys.load(null, null);
                char[] none = new char[0];
                keys.setKeyEntry("client", privateKey(keyFile), none, chain.toArray(new Certificate[0]));
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(keys, none);
            }
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot set up TLS to etcd: " + e.getMessage(), e);
        }
    }

    /** The password (the file's first line), read from a file private to its owner. */
    String password() {
        try {
            String text = PrivateFiles.read(passwordFile, "etcd password file");
            return text.lines().findFirst().orElse("");
        } catch (IOException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /**
     * The certificates in {@code file}, read with {@link PrivateFiles#readTrusted}: a certificate is no secret, so
     * others may read it, but the CA decides which etcd we trust and the client certificate who we are, so, like the
     * key and the password, it must be a regular file (no symbolic link) owned by root or this user that nobody else
     * may write, in directories nobody else may write.
     */
    private static Collection<? extends Certificate> certificates(Path file, String what) throws IOException, GeneralSecurityException {
        byte[] pem = PrivateFiles.readTrusted(file, what).getBytes(StandardCharsets.UTF_8);
        Collection<? extends Certificate> certs;
        try {
            certs = CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem));
        } catch (CertificateException e) {
            throw new IOException(what + " " + file + " holds no PEM certificate: " + e.getMessage());
        }
        if (certs.isEmpty()) throw new IOException(what + " " + file + " holds no PEM certificate");
        return certs;
    }

    private static final Pattern PKCS8 = Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");

    private static PrivateKey privateKey(Path file) throws IOException {
        String pem = PrivateFiles.read(file, "etcd client key file");
        Matcher m = PKCS8.matcher(pem);
        if (!m.find()) {
            String hint = pem.contains("BEGIN RSA PRIVATE KEY") || pem.contains("BEGIN EC PRIVATE KEY")
                    ? " (it is in the older PKCS#1/SEC1 form: convert it with openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8)"
                    : pem.contains("ENCRYPTED") ? " (it is encrypted: give the key without a passphrase, private to its owner)" : "";
            throw new IOException("etcd client key file " + file + " holds no PEM PKCS#8 private key" + hint);
        }
        byte[] der = Base64.getMimeDecoder().decode(m.group(1).getBytes(StandardCharsets.US_ASCII));
        for (String algorithm : new String[]{"RSA", "EC", "Ed25519"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // not this algorithm
            }
        }
        throw new IOException("etcd client key file " + file + ": not an RSA, EC or Ed25519 key");
    }
}
