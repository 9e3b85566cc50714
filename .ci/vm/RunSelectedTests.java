import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

import java.io.PrintWriter;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/**
 * Runs the JUnit tests named on the command line (a class, or Class#method) inside .ci/dispatcher-vm's VM, where
 * starting Maven under an emulated CPU would cost minutes. Prints each test as it ends and JUnit's summary, and exits
 * 0 only when at least one test ran and none failed, aborted or was skipped: a check that was meant to run and did
 * not must fail the CI step, not pass it.
 */
public class RunSelectedTests {
    public static void main(String[] args) {
        if (args.length == 0) {
            System.err.println("usage: RunSelectedTests CLASS[#METHOD]...");
            System.exit(2);
        }
        LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request();
        for (String name : args) request.selectors(name.contains("#") ? selectMethod(name) : selectClass(name));
        SummaryGeneratingListener summary = new SummaryGeneratingListener();
        TestExecutionListener progress = new TestExecutionListener() {
            private long started;

            @Override
            public void executionStarted(TestIdentifier test) {
                if (test.isTest()) started = System.nanoTime();
            }

            @Override
            public void executionSkipped(TestIdentifier test, String reason) {
                System.out.println("SKIPPED  " + test.getUniqueId() + ": " + reason);
            }

            @Override
            public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                if (!test.isTest() && result.getStatus() == TestExecutionResult.Status.SUCCESSFUL) return;
                String seconds = test.isTest() ? String.format(" (%.1f s)", (System.nanoTime() - started) / 1e9) : "";
                System.out.println(result.getStatus() + " " + test.getLegacyReportingName() + seconds
                        + result.getThrowable().map(t -> ": " + t).orElse(""));
            }
        };
        Launcher launcher = LauncherFactory.create();
        TestPlan plan = launcher.discover(request.build());
        launcher.execute(plan, summary, progress);
        TestExecutionSummary s = summary.getSummary();
        PrintWriter out = new PrintWriter(System.out, true);
        s.printTo(out);
        s.printFailuresTo(out, 60);
        boolean passed = s.getTestsSucceededCount() > 0 && s.getTotalFailureCount() == 0
                && s.getTestsAbortedCount() == 0 && s.getTestsSkippedCount() == 0 && s.getContainersSkippedCount() == 0;
        out.println(passed ? "RunSelectedTests: all " + s.getTestsSucceededCount() + " tests passed"
                : "RunSelectedTests: FAILED (" + s.getTestsSucceededCount() + " passed, " + s.getTotalFailureCount()
                + " failed, " + s.getTestsAbortedCount() + " aborted, " + s.getTestsSkippedCount() + " skipped)");
        System.exit(passed ? 0 : 1);
    }
}
