package io.xaforward.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

/** GPT-2 BPE ids against ids published for GPT-2 (tiktoken "gpt2" / Hugging Face GPT2Tokenizer), and the byte tokenizer. */
class TokenizerTest {

    private final Tokenizer gpt2 = Tokenizer.byName("gpt2");

    @Test
    void gpt2IdsMatchKnownIds() {
        assertArrayEquals(new int[] {15496, 995}, gpt2.encode("Hello world"));
        assertArrayEquals(new int[] {464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290},
                gpt2.encode("The quick brown fox jumps over the lazy dog"));
        assertArrayEquals(new int[] {262}, gpt2.encode(" the"));
        assertArrayEquals(new int[] {628}, gpt2.encode("\n\n"));
        assertEquals(50257, gpt2.vocabSize());
        assertEquals(50256, gpt2.endOfText());
    }

    @Test
    void specialTokenSpellingIsOrdinaryText() {
        int[] ids = gpt2.encode("<|endoftext|>");
        assertEquals(-1, Arrays.stream(ids).filter(id -> id == 50256).findAny().orElse(-1));
        assertEquals("<|endoftext|>", gpt2.decode(ids));
    }

    @Test
    void decodeInvertsEncode() {
        String text = "Mr President, the Commission's proposal — 12,5 % — was adopted.\n\nÀ demain !";
        assertEquals(text, gpt2.decode(gpt2.encode(text)));
        assertThrows(IllegalArgumentException.class, () -> gpt2.decode(new int[] {50257}));
    }

    @Test
    void bytesTokenizerIsUtf8() {
        Tokenizer bytes = Tokenizer.byName("BYTES");
        assertArrayEquals(new int[] {104, 195, 169}, bytes.encode("hé"));
        assertEquals("hé", bytes.decode(new int[] {104, 195, 169}));
        assertEquals(256, bytes.vocabSize());
        assertThrows(IllegalArgumentException.class, () -> Tokenizer.byName("sentencepiece"));
    }

    @Test
    void slicedEncodingEqualsWholeEncoding() {
        StringBuilder text = new StringBuilder();
        String[] lines = {"The Parliament adopted the resolution.", "  indented line", "", "x \n", "2004: 17 votes",
                "\tTabbed.", "Über alles", "end"};
        for (int i = 0; i < 400; i++) {
            text.append(lines[i % lines.length]).append(i % 3 == 0 ? "\n\n" : "\n");
        }
        CorpusPreparer.IntBuffer sliced = new CorpusPreparer.IntBuffer();
        CorpusPreparer.encodeInSlices(text.toString(), gpt2, sliced, 97);
        assertArrayEquals(gpt2.encode(text.toString()), Arrays.copyOf(sliced.values, sliced.size));
    }
}
