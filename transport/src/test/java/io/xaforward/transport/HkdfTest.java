package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** HKDF-SHA256 against the test vectors of RFC 5869, appendix A (cases 1 to 3). */
class HkdfTest {
    private static byte[] hex(String s) {
        return HexFormat.of().parseHex(s);
    }

    private static byte[] range(int from, int toExclusive) {
        byte[] b = new byte[toExclusive - from];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (from + i);
        return b;
    }

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, (byte) v);
        return b;
    }

    @Test
    void rfc5869Case1BasicWithSha256() {
        byte[] prk = Hkdf.extract(range(0x00, 0x0d), filled(22, 0x0b));
        assertArrayEquals(hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"), prk);
        assertArrayEquals(hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
                Hkdf.expand(prk, range(0xf0, 0xfa), 42));
    }

    @Test
    void rfc5869Case2LongerInputsAndOutput() {
        byte[] prk = Hkdf.extract(range(0x60, 0xb0), range(0x00, 0x50));
        assertArrayEquals(hex("06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244"), prk);
        assertArrayEquals(hex("b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e"
                        + "590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"),
                Hkdf.derive(range(0x60, 0xb0), range(0x00, 0x50), range(0xb0, 0x100), 82));
    }

    @Test
    void rfc5869Case3EmptySaltAndInfo() {
        byte[] prk = Hkdf.extract(new byte[0], filled(22, 0x0b));
        assertArrayEquals(hex("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"), prk);
        assertArrayEquals(hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
                Hkdf.expand(prk, new byte[0], 42));
    }

    @Test
    void outputLongerThan255BlocksIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Hkdf.expand(new byte[32], new byte[0], 255 * 32 + 1));
    }
}
