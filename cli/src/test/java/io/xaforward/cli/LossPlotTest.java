package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import javax.imageio.ImageIO;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The loss plot draws each validation point with an error bar of one standard error. */
class LossPlotTest {

    private static Path metrics(Path dir, String name, double standardError) throws Exception {
        List<String> lines = new ArrayList<>();
        for (int step = 1; step <= 20; step++) {
            String validation = step % 10 == 0
                    ? "\"val_loss\": " + (8.0 - step * 0.1) + ", \"val_loss_se\": " + standardError + ", \"val_windows\": 389"
                    : "\"val_loss\": null, \"val_loss_se\": null, \"val_windows\": null";
            lines.add("{\"step\": " + step + ", \"loss\": " + (9.0 - step * 0.1) + ", " + validation + "}");
        }
        return Files.write(dir.resolve(name), lines);
    }

    /** Pixels of the validation series' red (antialiased edges included). */
    private static int redPixels(Path png) throws Exception {
        BufferedImage image = ImageIO.read(png.toFile());
        int pixels = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int rgb = image.getRGB(x, y);
                int r = (rgb >> 16) & 0xff, g = (rgb >> 8) & 0xff, b = rgb & 0xff;
                if (r > 150 && g < 120 && b < 120) {
                    pixels++;
                }
            }
        }
        return pixels;
    }

    @Test
    void validationPointsCarryTheirStandardError(@TempDir Path dir) throws Exception {
        Path narrow = dir.resolve("narrow.png");
        Path wide = dir.resolve("wide.png");
        LossPlot.write(metrics(dir, "narrow.jsonl", 0.0), narrow, "test");
        LossPlot.write(metrics(dir, "wide.jsonl", 0.4), wide, "test");
        int withoutBars = redPixels(narrow);
        int withBars = redPixels(wide);
        assertTrue(withoutBars > 0, "validation points drawn");
        // Two bars of +-0.4 nats on a ~4-nat axis of ~330 pixels: ~130 pixels of red more.
        assertTrue(withBars > withoutBars + 60, "error bars: " + withoutBars + " -> " + withBars + " red pixels");
    }
}
