package io.xaforward.training;

import java.nio.charset.StandardCharsets;

/** UTF-8 bytes as tokens (vocabulary 256): every text is valid input and nothing needs to be shipped. */
public final class ByteTokenizer implements Tokenizer {

    public static final ByteTokenizer INSTANCE = new ByteTokenizer();

    private ByteTokenizer() {
    }

    @Override
    public String name() {
        return "bytes";
    }

    @Override
    public int vocabSize() {
        return TextDataset.BYTE_VOCAB;
    }

    @Override
    public int[] encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            ids[i] = bytes[i] & 0xFF;
        }
        return ids;
    }

    @Override
    public String decode(int[] ids) {
        byte[] bytes = new byte[ids.length];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] > 0xFF) {
                throw new IllegalArgumentException("byte token id " + ids[i] + " outside 0..255");
            }
            bytes[i] = (byte) ids[i];
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Override
    public int endOfText() {
        return -1;
    }
}
