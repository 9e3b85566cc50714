package io.xaforward.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The PyTorch example's promise (examples/pytorch, docs/PYTORCH.md "Example"): its distributed form differs from
 * the single-process form in at most five lines, each of them XAForward's API, and the single-process form is
 * deterministic, so that losses of the two can be compared (PyTorchTrainingTest compares them across the emulated
 * data centers).
 */
class PyTorchExampleTest {
    static final Path EXAMPLES = Path.of("..", "examples", "pytorch");

    @TempDir
    Path dir;

    /** Lines of {@code a} and {@code b} outside their longest common subsequence: what a line diff shows as - and +. */
    static List<List<String>> changedLines(List<String> a, List<String> b) {
        int[][] lcs = new int[a.size() + 1][b.size() + 1];
        for (int i = a.size() - 1; i >= 0; i--)
            for (int j = b.size() - 1; j >= 0; j--)
                lcs[i][j] = a.get(i).equals(b.get(j)) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
        List<String> removed = new ArrayList<>(), added = new ArrayList<>();
        int i = 0, j = 0;
        while (i < a.size() || j < b.size()) {
            if (i < a.size() && j < b.size() && a.get(i).equals(b.get(j))) {
                i++;
                j++;
            } else if (j < b.size() && (i == a.size() || lcs[i][j + 1] >= lcs[i + 1][j])) {
                added.add(b.get(j++));
            } else {
                removed.add(a.get(i++));
            }
        }
        return List.of(removed, added);
    }

    @Test
    void theDistributedFormChangesAtMostFiveLinesAllOfThemXaforwardsApi() throws Exception {
        List<String> single = Files.readAllLines(EXAMPLES.resolve("train_gpt.py"));
        List<String> distributed = Files.readAllLines(EXAMPLES.resolve("train_gpt_xaf.py"));
        List<List<String>> changed = changedLines(single, distributed);
        List<String> removed = changed.get(0), added = changed.get(1);
        // A replaced line counts once: the changed lines are the larger side of the diff.
        int count = Math.max(removed.size(), added.size());
        assertTrue(count <= 5, "changed lines: " + count + "\n-" + String.join("\n-", removed) + "\n+" + String.join("\n+", added));
        assertTrue(count >= 4, "the diff holds import, init, broadcast and DistributedOptimizer: " + added);
        for (String line : added) assertTrue(line.contains("xaf"), "a changed line that is not XAForward's API: " + line);
        assertTrue(added.stream().anyMatch(l -> l.contains("xaf.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())")), added.toString());
        assertTrue(added.stream().anyMatch(l -> l.contains("xaf.broadcast_parameters(model.state_dict(), root_rank=0)")), added.toString());
        assertTrue(added.stream().anyMatch(l -> l.strip().equals("import xaforward.torch as xaf")), added.toString());
    }

    /**
     * train_ddp.py runs over Gloo and over XAForward from the same text: the backend is the argument's word, used only
     * by init_process_group and to import the package that registers "xaf". No other line of code names a backend.
     */
    /** A backend's name as a string, the word backend, or XAForward's package: what could select a backend. */
    static final java.util.regex.Pattern BACKEND_WORD = java.util.regex.Pattern.compile("[\"'](gloo|xaf|nccl|mpi)[\"']|backend|xaforward");

    @Test
    void theDdpExampleTakesItsBackendFromTheArgumentOnly() throws Exception {
        String text = Files.readString(EXAMPLES.resolve("train_ddp.py"));
        String code = text.substring(text.indexOf("\"\"\"", 3) + 3); // after the module docstring
        List<String> naming = new ArrayList<>();
        for (String line : code.lines().toList()) {
            String stripped = line.replaceAll("\\s+#.*$", "").strip();
            if (stripped.startsWith("#")) continue;
            if (BACKEND_WORD.matcher(stripped).find()) naming.add(stripped);
        }
        assertEquals(List.of(
                "parser.add_argument(\"--backend\", choices=[\"gloo\", \"xaf\"], default=\"gloo\", help=\"torch.distributed backend\")",
                "if args.backend == \"xaf\":",
                "import xaforward.torch.distributed",
                "dist.init_process_group(backend=args.backend)"), naming);
        // and, apart from that, it is train_gpt.py with DistributedDataParallel
        List<List<String>> changed = changedLines(Files.readAllLines(EXAMPLES.resolve("train_gpt.py")),
                code.lines().toList());
        List<String> added = changed.get(1).stream().filter(l -> !l.isBlank()).toList();
        assertTrue(added.contains("    ddp = DDP(model)  # starts from rank 0's weights; averages the gradients across ranks during backward"), added.toString());
        assertTrue(added.size() <= 10, "code lines added to train_gpt.py: " + added);
    }

    @Test
    void theLineCountSeesAReplacedLineAndAnInsertion() {
        List<List<String>> c = changedLines(List.of("a", "b", "c"), List.of("a", "B", "x", "c"));
        assertEquals(List.of("b"), c.get(0));
        assertEquals(List.of("B", "x"), c.get(1));
    }

    @Test
    void theSingleProcessFormIsDeterministic() throws Exception {
        PyTorchTrainingTest.writeByteData(dir, 20_000);
        List<String> command = new ArrayList<>(List.of("/usr/bin/python3", EXAMPLES.resolve("train_gpt.py").toString(),
                "--data", dir.toString(), "--steps", "4", "--batch", "4", "--layers", "1", "--width", "32", "--heads", "2",
                "--context", "32"));
        String first = run(command), second = run(command);
        assertTrue(first.contains("step 4/4 loss "), first);
        assertTrue(first.contains("rank 0 weights checksum "), first);
        assertEquals(first.lines().filter(l -> !l.startsWith("step")).toList(), second.lines().filter(l -> !l.startsWith("step")).toList());
        // Step lines end with their time in ms; everything before it must repeat exactly.
        assertEquals(first.lines().filter(l -> l.startsWith("step")).map(l -> l.substring(0, l.lastIndexOf(' ', l.length() - 4))).toList(),
                second.lines().filter(l -> l.startsWith("step")).map(l -> l.substring(0, l.lastIndexOf(' ', l.length() - 4))).toList());
    }

    private static String run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return out;
    }
}
