package io.xaforward.common;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * etcd's CA certificate and the client certificate decide whom the client trusts and who it is: they are read with
 * the checks of {@link PrivateFiles#readTrusted} (others may read them, not write them; no symbolic link; owned by
 * root or this user; no directory above them writable by others), the client key and password with those of secrets.
 * Each refusal names the file and the fix. Certificates made with openssl, as etcd's own tooling makes them.
 */
class EtcdSecurityFilesTest {
    @TempDir
    Path dir;
    LocalEtcd.Tls tls;

    @BeforeEach
    void certificates() throws Exception {
        tls = LocalEtcd.Tls.generate(dir, List.of("127.0.0.1"));
        Files.setPosixFilePermissions(tls.ca(), PosixFilePermissions.fromString("rw-r--r--"));
        Files.setPosixFilePermissions(tls.clientCert(), PosixFilePermissions.fromString("rw-r--r--"));
    }

    EtcdSecurity security() {
        return new EtcdSecurity(tls.ca(), tls.clientCert(), tls.clientKey(), null, null);
    }

    String refusal() {
        return assertThrows(IllegalArgumentException.class, () -> security().sslContext()).getMessage();
    }

    @Test
    void readableCertificatesAndAPrivateKeyInAPrivateDirectoryAreAccepted() {
        assertNotNull(security().sslContext());
    }

    @Test
    void aCaFileOthersMayWriteIsRefused() throws IOException {
        Files.setPosixFilePermissions(tls.ca(), PosixFilePermissions.fromString("rw-rw-rw-"));
        assertEquals("cannot set up TLS to etcd: etcd CA file " + tls.ca() + " is writable by group or others"
                + " (permissions rw-rw-rw-); only its owner may change it: chmod go-w " + tls.ca(), refusal());
    }

    @Test
    void aClientCertificateOthersMayWriteIsRefused() throws IOException {
        Files.setPosixFilePermissions(tls.clientCert(), PosixFilePermissions.fromString("rw-r---w-"));
        assertTrue(refusal().startsWith("cannot set up TLS to etcd: etcd client certificate " + tls.clientCert()
                + " is writable by group or others"));
    }

    @Test
    void aCaFileThatIsASymbolicLinkIsRefused() throws IOException {
        Path link = Files.createSymbolicLink(dir.resolve("ca-link.crt"), tls.ca());
        EtcdSecurity s = new EtcdSecurity(link, null, null, null, null);
        var e = assertThrows(IllegalArgumentException.class, s::sslContext);
        assertEquals("cannot set up TLS to etcd: etcd CA file " + link + " is a symbolic link; give the file itself,"
                + " writable by its owner only (chmod go-w)", e.getMessage());
    }

    @Test
    void aCaFileOwnedByAnotherUserIsRefused() throws Exception {
        assertEquals("root", System.getProperty("user.name"), "the tests run as root here; chown needs it");
        Process chown = new ProcessBuilder("chown", "65534", tls.ca().toString()).inheritIO().start();
        assertEquals(0, chown.waitFor());
        assertTrue(refusal().contains("etcd CA file " + tls.ca() + " is owned by uid 65534"), refusal());
    }

    @Test
    void certificatesAndKeysInADirectoryOthersMayWriteAreRefused() throws IOException {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxr-x"));
        try {
            assertEquals("cannot set up TLS to etcd: etcd CA file " + tls.ca() + " lies in directory " + dir
                    + ", which is writable by group or others (permissions rwxrwxr-x): they could replace the file;"
                    + " chmod go-w " + dir + " (or move the file to a directory only its owner may change)", refusal());
            // The key alone (no CA: the JDK's trust) is refused the same way.
            EtcdSecurity keyOnly = new EtcdSecurity(null, tls.clientCert(), tls.clientKey(), null, null);
            var e = assertThrows(IllegalArgumentException.class, keyOnly::sslContext);
            assertTrue(e.getMessage().contains("lies in directory " + dir + ", which is writable by group or others"),
                    e.getMessage());
        } finally {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        }
    }

    @Test
    void aPasswordFileInADirectoryOthersMayWriteIsRefused() throws IOException {
        Path open = Files.createDirectory(dir.resolve("open"));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path password = open.resolve("password");
        Files.writeString(password, "pw\n");
        Files.setPosixFilePermissions(password, PosixFilePermissions.fromString("rw-------"));
        EtcdSecurity s = new EtcdSecurity(null, null, null, "xaf", password);
        var e = assertThrows(IllegalArgumentException.class, s::password);
        assertTrue(e.getMessage().startsWith("etcd password file " + password + " lies in directory " + open
                + ", which is writable by group or others"), e.getMessage());
    }
}
