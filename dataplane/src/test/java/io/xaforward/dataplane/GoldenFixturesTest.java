package io.xaforward.dataplane;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The golden packet files and their generator agree, so neither is edited without the other. With
 * {@code -Dxaf.golden.regenerate=true} the generator writes the files first (docs/ARCHITECTURE.md, "Golden packets").
 */
class GoldenFixturesTest {
    static final String REGENERATE = "to regenerate: mvn -pl dataplane test -Dtest=GoldenFixturesTest -Dxaf.golden.regenerate=true";

    @Test
    void filesAreWhatTheGeneratorWrites() throws IOException {
        if (Boolean.getBoolean("xaf.golden.regenerate")) GoldenFixtures.write(GoldenFixtures.SOURCE_DIR);
        assertTrue(Files.isDirectory(GoldenFixtures.SOURCE_DIR), () -> GoldenFixtures.SOURCE_DIR.toAbsolutePath() + " (tests run in the dataplane module)");
        Map<String, String> generated = GoldenFixtures.render();
        Map<String, String> files = GoldenFixtures.readFiles(GoldenFixtures.SOURCE_DIR);
        assertEquals(generated.keySet(), files.keySet(), () -> "files under " + GoldenFixtures.SOURCE_DIR + "; " + REGENERATE);
        for (String name : generated.keySet()) {
            String difference = firstDifference(generated.get(name), files.get(name));
            assertNull(difference, () -> name + " differs from what GoldenFixtures generates: " + difference + "; " + REGENERATE);
        }
    }

    /** Where two texts first differ (line number, the fixture it belongs to, both lines cut short), or null. */
    static String firstDifference(String expected, String actual) {
        String[] e = expected.split("\n", -1), a = actual.split("\n", -1);
        String fixture = "(file heading)";
        for (int i = 0; i < Math.max(e.length, a.length); i++) {
            String el = i < e.length ? e[i] : "<end of file>", al = i < a.length ? a[i] : "<end of file>";
            if (el.startsWith("name: ")) fixture = el.substring(6);
            if (!el.equals(al)) {
                return "line " + (i + 1) + " in fixture '" + fixture + "': generated " + cut(el) + ", file " + cut(al);
            }
        }
        return null;
    }

    private static String cut(String line) {
        return "'" + (line.length() > 120 ? line.substring(0, 120) + "...' (" + line.length() + " chars)" : line + "'");
    }

    @Test
    void aDifferenceIsNamedByLineAndFixture() {
        assertNull(firstDifference("a\nname: x\nb\n", "a\nname: x\nb\n"));
        assertEquals("line 3 in fixture 'x': generated 'b', file 'c'", firstDifference("a\nname: x\nb\n", "a\nname: x\nc\n"));
        assertEquals("line 2 in fixture '(file heading)': generated 'b', file '<end of file>'", firstDifference("a\nb", "a"));
    }

    @Test
    void everyFixtureReadsBackAsWritten() {
        Set<String> names = new HashSet<>();
        int count = 0;
        for (GoldenFixtures.Group g : GoldenFixtures.groups()) {
            List<GoldenFixture> read = GoldenFixture.parseFile(GoldenFixtures.render().get(g.file()), g.file());
            assertEquals(g.fixtures().size(), read.size(), g.file());
            for (int i = 0; i < read.size(); i++) {
                GoldenFixture written = g.fixtures().get(i);
                assertEquals(written.format(), read.get(i).format(), written.name());
                assertEquals(written.setup(), read.get(i).setup(), "setup (routes compared field by field)");
                assertTrue(names.add(read.get(i).name()), () -> "fixture names are unique: " + written.name());
                count++;
            }
        }
        assertEquals(183, count, "golden packets in all files");
    }

    @Test
    void malformedFilesAreRefusedWithTheirPlace() {
        String good = GoldenFixtures.groups().get(0).fixtures().get(0).format();
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> GoldenFixture.parseFile("# comment\n\n" + good + "colour: blue\n", "x.txt"));
        assertTrue(unknown.getMessage().startsWith("x.txt:3: unknown key 'colour'"), unknown.getMessage());
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> GoldenFixture.parseFile(good.replaceAll("(?m)^counter: .*\n", ""), "x.txt"));
        assertTrue(missing.getMessage().contains("no 'counter'"), missing.getMessage());
        IllegalArgumentException setup = assertThrows(IllegalArgumentException.class,
                () -> GoldenFixture.parseFile(good.replaceFirst("setup: port 1 slot 3", "setup: port 1 slot 3 speed 9"), "x.txt"));
        assertTrue(setup.getMessage().contains("unknown [speed]"), setup.getMessage());
    }
}
