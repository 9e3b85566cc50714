package io.xaforward.bench.soak;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Every step record of every rank of a job, run by run (a run: one process of the rank, from its {@code start} line
 * with {@code from_step} to its end), and the accounting of them.
 *
 * <p>Why per rank and per run: ranks that compare weights only with each other agree even when a contribution was lost
 * or counted twice (they all apply the same wrong sum), and rank 0's own records say nothing of whether rank 2 skipped
 * or repeated a step after a restart. So every rank's history is checked on its own: each run reports the steps after
 * the one it resumed from, consecutively and once; each resume point is a step an earlier run of that rank completed
 * (its checkpoint); the runs that the resumes chain together, from step 0 to the target, give each step 1..target
 * exactly once. Then, step by step, every record of a step (every rank, every run, recomputed ones included) must
 * carry the same loss (the global batch's, all-reduced) and weight checksum; and against a fault-free run of the same
 * seed, every step's must be the reference's. Not thread-safe: the caller holds its lock.
 */
public final class StepLedger {
    /** One {@code step} line: the step completed (1-based), the loss as printed, the checksum (null: none reported). */
    public record Record(long step, String loss, String checksum) {}

    /** One process of a rank: where it resumed, and what it reported in order. */
    private record Run(long from, List<Record> records) {}

    /**
     * What one rank's history adds up to, for steps 1..target.
     *
     * @param runs            processes of the rank that started training
     * @param reported        step records it printed up to the target (recomputed ones included)
     * @param kept            steps of the chain of resumes that reaches the target: target when nothing is missing
     * @param recomputed      records of steps that a later run computed again (reported up to the target less kept)
     */
    public record RankAccount(int rank, int runs, long reported, long kept, long recomputed) {}

    /** The accounting of the whole job up to {@code target}; {@code problems} is empty when every step adds up. */
    public record Accounting(long target, List<RankAccount> ranks, long stepsAgreed, List<String> problems) {
        public boolean complete() {
            return problems.isEmpty();
        }
    }

    /** How the job compares with a fault-free reference, step by step up to the target. */
    public record Comparison(long target, String checksum, String referenceChecksum, long stepsEqual,
                             List<String> differences) {
        public boolean finalEqual() {
            return checksum != null && checksum.equals(referenceChecksum);
        }
    }

    /** At most this many problems are listed: the first say what went wrong, the rest only repeat it. */
    static final int LISTED = 20;

    private final int world;
    private final Map<Integer, List<Run>> runs = new TreeMap<>();
    /** Records that came before any start line of their rank: none should. */
    private final Map<Integer, Long> orphans = new TreeMap<>();

    public StepLedger(int world) {
        if (world < 1) throw new IllegalArgumentException("world " + world);
        this.world = world;
        for (int r = 0; r < world; r++) runs.put(r, new ArrayList<>());
    }

    /** A new run of {@code rank} starts training after {@code fromStep} (0: from the beginning). */
    public void start(int rank, long fromStep) {
        runs.get(checkRank(rank)).add(new Run(fromStep, new ArrayList<>()));
    }

    /** {@code rank}'s current run completed {@code step}. */
    public void step(int rank, long step, String loss, String checksum) {
        List<Run> r = runs.get(checkRank(rank));
        if (r.isEmpty()) {
            orphans.merge(rank, 1L, Long::sum);
            return;
        }
        r.getLast().records().add(new Record(step, loss, checksum));
    }

    /** How many runs {@code rank} has started. */
    public int runs(int rank) {
        return runs.get(checkRank(rank)).size();
    }

    /** The checksums of {@code step} that the ranks' current runs reported (rank -> checksum). */
    public Map<Integer, String> currentChecksums(long step) {
        Map<Integer, String> found = new TreeMap<>();
        for (var e : runs.entrySet()) {
            if (e.getValue().isEmpty()) continue;
            for (Record rec : e.getValue().getLast().records()) {
                if (rec.step() == step && rec.checksum() != null) found.put(e.getKey(), rec.checksum());
            }
        }
        return found;
    }

    /** Every step reported, with every distinct checksum it was reported with and by whom ("rank 2 run 3"). */
    public Map<Long, Map<String, List<String>>> checksumsByStep() {
        Map<Long, Map<String, List<String>>> out = new TreeMap<>();
        for (var e : runs.entrySet()) {
            for (int i = 0; i < e.getValue().size(); i++) {
                for (Record rec : e.getValue().get(i).records()) {
                    if (rec.checksum() == null) continue;
                    out.computeIfAbsent(rec.step(), k -> new TreeMap<>()).computeIfAbsent(rec.checksum(), k -> new ArrayList<>())
                            .add("rank " + e.getKey() + " run " + (i + 1));
                }
            }
        }
        return out;
    }

    /** Accounts every rank's steps 1..{@code target} (see the class comment). */
    public Accounting account(long target) {
        List<String> problems = new ArrayList<>();
        List<RankAccount> accounts = new ArrayList<>();
        for (var e : orphans.entrySet()) {
            problems.add("rank " + e.getKey() + ": " + e.getValue() + " step records before its first start");
        }
        // step -> the (loss, checksum) every record of it must carry, and who reported it first
        Map<Long, Record> agreed = new TreeMap<>();
        Map<Long, String> agreedBy = new TreeMap<>();
        Map<Long, Integer> keptBy = new TreeMap<>(); // step -> how many ranks' chains hold it
        for (int rank = 0; rank < world; rank++) {
            List<Run> history = runs.get(rank);
            long reported = 0;
            for (int i = 0; i < history.size(); i++) {
                Run run = history.get(i);
                String who = "rank " + rank + " run " + (i + 1);
                long expected = run.from() + 1;
                for (Record rec : run.records()) {
                    if (rec.step() != expected) {
                        problems.add(who + " (from step " + run.from() + "): step " + rec.step() + " where step "
                                + expected + " was due (" + (rec.step() < expected ? "repeated" : "skipped") + ")");
                        expected = rec.step();
                    }
                    expected++;
                    if (rec.step() > target) continue;
                    reported++;
                    Record first = agreed.putIfAbsent(rec.step(), rec);
                    if (first == null) {
                        agreedBy.put(rec.step(), who);
                    } else if (!Objects.equals(first.loss(), rec.loss())
                            || (first.checksum() != null && rec.checksum() != null && !first.checksum().equals(rec.checksum()))) {
                        problems.add("step " + rec.step() + ": " + who + " reported loss " + rec.loss() + " checksum "
                                + rec.checksum() + ", " + agreedBy.get(rec.step()) + " loss " + first.loss()
                                + " checksum " + first.checksum());
                    }
                }
            }
            long kept = chain(rank, history, target, problems, keptBy);
            accounts.add(new RankAccount(rank, history.size(), reported, kept, reported - kept));
        }
        long stepsAgreed = 0;
        for (long s = 1; s <= target; s++) {
            if (keptBy.getOrDefault(s, 0) == world) stepsAgreed++;
        }
        if (stepsAgreed < target) problems.add(stepsAgreed + " of " + target + " steps are held by every rank's chain");
        return new Accounting(target, List.copyOf(accounts), stepsAgreed, limit(problems));
    }

    /**
     * Walks {@code rank}'s resumes back from the target: the last run must reach the target, and each run resumed
     * from a step that the latest earlier run to report it completed (that run wrote the checkpoint), down to a run
     * that started from 0. Counts each step of the chain into {@code keptBy}; returns the chain's length.
     */
    private static long chain(int rank, List<Run> history, long target, List<String> problems, Map<Long, Integer> keptBy) {
        if (history.isEmpty()) {
            problems.add("rank " + rank + ": no run started");
            return 0;
        }
        long kept = 0;
        long upTo = target;
        int i = history.size() - 1;
        while (true) {
            Run run = history.get(i);
            for (long s = run.from() + 1; s <= upTo; s++) {
                if (!reportedIn(run, s)) {
                    problems.add("rank " + rank + " run " + (i + 1) + " (from step " + run.from() + "): step " + s
                            + " missing, which the chain to step " + target + " needs");
                    return kept;
                }
                keptBy.merge(s, 1, Integer::sum);
                kept++;
            }
            if (run.from() == 0) return kept;
            upTo = run.from();
            int provider = -1;
            for (int j = i - 1; j >= 0 && provider < 0; j--) {
                if (reportedIn(history.get(j), upTo)) provider = j;
            }
            if (provider < 0) {
                problems.add("rank " + rank + " run " + (i + 1) + " resumed from step " + upTo
                        + ", which no earlier run of the rank completed");
                return kept;
            }
            i = provider;
        }
    }

    private static boolean reportedIn(Run run, long step) {
        long index = step - run.from() - 1;
        if (index < 0 || index >= run.records().size()) return false;
        // Runs are consecutive when they add up; otherwise search (a problem is reported anyway).
        if (run.records().get((int) index).step() == step) return true;
        return run.records().stream().anyMatch(r -> r.step() == step);
    }

    /**
     * Compares every step 1..target with the fault-free {@code reference}: the loss and checksum that all records
     * of a step carry here must be the reference's.
     */
    public Comparison compare(StepLedger reference, long target) {
        Map<Long, Record> mine = firstRecords(target), theirs = reference.firstRecords(target);
        List<String> differences = new ArrayList<>();
        long equal = 0;
        for (long s = 1; s <= target; s++) {
            Record a = mine.get(s), b = theirs.get(s);
            if (a == null || b == null) {
                differences.add("step " + s + ": " + (a == null ? "not reported by the soak" : "not reported by the reference"));
            } else if (!a.loss().equals(b.loss()) || !Objects.equals(a.checksum(), b.checksum())) {
                differences.add("step " + s + ": loss " + a.loss() + " checksum " + a.checksum() + ", reference loss "
                        + b.loss() + " checksum " + b.checksum());
            } else {
                equal++;
            }
        }
        Record last = mine.get(target), refLast = theirs.get(target);
        return new Comparison(target, last == null ? null : last.checksum(), refLast == null ? null : refLast.checksum(),
                equal, limit(differences));
    }

    /** The first record of each step up to {@code target} with a checksum if any has one (all must agree anyway). */
    private Map<Long, Record> firstRecords(long target) {
        Map<Long, Record> out = new LinkedHashMap<>();
        for (List<Run> history : runs.values()) {
            for (Run run : history) {
                for (Record rec : run.records()) {
                    if (rec.step() > target) continue;
                    Record had = out.get(rec.step());
                    if (had == null || (had.checksum() == null && rec.checksum() != null)) out.put(rec.step(), rec);
                }
            }
        }
        return out;
    }

    private static List<String> limit(List<String> problems) {
        if (problems.size() <= LISTED) return List.copyOf(problems);
        List<String> out = new ArrayList<>(problems.subList(0, LISTED));
        out.add("... and " + (problems.size() - LISTED) + " more");
        return List.copyOf(out);
    }

    private int checkRank(int rank) {
        if (rank < 0 || rank >= world) throw new IllegalArgumentException("rank " + rank + " of " + world);
        return rank;
    }
}
