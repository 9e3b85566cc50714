package io.xaforward.training;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads text files as strict UTF-8: a file that is not names itself and the byte offset of its first bad byte. */
public final class TextFiles {
    private TextFiles() {}

    /**
     * The text of {@code file}, decoded as UTF-8.
     *
     * @throws IllegalArgumentException naming the file and the offset of the first byte that is not UTF-8
     */
    public static String readUtf8(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(bytes.length);
        CoderResult r = decoder.decode(in, out, true);
        if (r.isUnderflow()) r = decoder.flush(out);
        if (r.isError()) {
            int at = in.position();
            StringBuilder seen = new StringBuilder();
            for (int i = at; i < Math.min(bytes.length, at + r.length()); i++) seen.append(String.format(" 0x%02x", bytes[i] & 0xff));
            throw new IllegalArgumentException(file + " is not UTF-8 text: byte offset " + at + " holds" + seen
                    + ", which is not valid UTF-8 (a binary file, or text in another encoding: convert it with iconv -t UTF-8)");
        }
        return out.flip().toString();
    }
}
