package io.xaforward.cli;

import io.xaforward.bench.ForwardBench;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.SyncMode;
import io.xaforward.common.ConfigWord;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.collective.WireDtype;
import io.xaforward.gateway.GatewayConfig.AttachMode;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.util.Arrays;
import java.util.Locale;
import java.util.function.Function;

/**
 * The picocli converters of every configuration word the CLI reads: an option typed as the enum names its converter
 * ({@code converter = Words.WireSecurityWord.class}), so the word is read once, while picocli parses the command line
 * (or a setting inherited from a cluster file, etcd or a checkpoint, parsed through the same option), and the command
 * holds the constant from then on. Each converter reads the words its enum's {@code fromName} reads (docs/ARCHITECTURE.md,
 * "Words and specs"); a word that names nothing is a {@link BadWord} carrying that enum's own message, which
 * {@link Main} prints as the one line {@code xaf: unknown wire security 'x'; expected one of ...}, exit status 1.
 */
final class Words {
    private Words() {}

    /** A word that names no constant; its message is the enum's own (it names the kind and lists the words). */
    static final class BadWord extends TypeConversionException {
        BadWord(String message) {
            super(message);
        }
    }

    /**
     * The {@link BadWord} behind a picocli parameter error, or null when the error is another one (an unknown option,
     * a number that is not one: picocli's own message and usage help, as for any option).
     */
    static BadWord badWord(CommandLine.ParameterException e) {
        return e.getCause() instanceof BadWord b ? b : null;
    }

    /** A value as the command line writes it: a configuration constant as its word, anything else as itself. */
    static String text(Object value) {
        return value instanceof ConfigWord w ? w.configName() : String.valueOf(value);
    }

    /** {@link #text(Object)}, and {@code on}/{@code off} for an option that reads them ({@link OnOff}). */
    static String text(CommandLine.Model.OptionSpec option, Object value) {
        boolean onOff = Arrays.stream(option.converters()).anyMatch(c -> c instanceof OnOff);
        return onOff && value instanceof Boolean b ? (b ? "on" : "off") : text(value);
    }

    /** Reads a word with {@code fromName}; its IllegalArgumentException becomes a {@link BadWord} with the same message. */
    abstract static class Word<E> implements ITypeConverter<E> {
        private final Function<String, E> fromName;

        Word(Function<String, E> fromName) {
            this.fromName = fromName;
        }

        @Override
        public E convert(String word) {
            try {
                return fromName.apply(word);
            } catch (IllegalArgumentException e) {
                throw new BadWord(e.getMessage());
            }
        }
    }

    static final class GatewayModeWord extends Word<GatewayMode> {
        GatewayModeWord() {
            super(GatewayMode::fromName);
        }
    }

    /** An empty word is no choice: the gateway mode's default endpoint ({@link Endpoint#resolve(Endpoint, GatewayMode)}). */
    static final class EndpointWord extends Word<Endpoint> {
        EndpointWord() {
            super(word -> word.isBlank() ? null : Endpoint.fromName(word));
        }
    }

    static final class AlgorithmWord extends Word<Algorithm> {
        AlgorithmWord() {
            super(Algorithm::fromName);
        }
    }

    static final class WireDtypeWord extends Word<WireDtype> {
        WireDtypeWord() {
            super(WireDtype::fromName);
        }
    }

    static final class OuterDtypeWord extends Word<OuterDtype> {
        OuterDtypeWord() {
            super(OuterDtype::fromName);
        }
    }

    static final class SyncModeWord extends Word<SyncMode> {
        SyncModeWord() {
            super(SyncMode::fromName);
        }
    }

    static final class WireSecurityWord extends Word<WireSecurity> {
        WireSecurityWord() {
            super(WireSecurity::fromName);
        }
    }

    static final class NetworkFormWord extends Word<NetworkForm> {
        NetworkFormWord() {
            super(NetworkForm::fromName);
        }
    }

    static final class AttachModeWord extends Word<AttachMode> {
        AttachModeWord() {
            super(AttachMode::fromName);
        }
    }

    static final class ForwardModeWord extends Word<ForwardBench.Mode> {
        ForwardModeWord() {
            super(ForwardBench.Mode::fromName);
        }
    }

    /** {@code --overlap}: on or off (true/yes, false/no too), any case. */
    static final class OnOff extends Word<Boolean> {
        OnOff() {
            super(word -> switch (word.toLowerCase(Locale.ROOT)) {
                case "on", "true", "yes" -> true;
                case "off", "false", "no" -> false;
                default -> throw new IllegalArgumentException("--overlap must be on or off, was '" + word + "'");
            });
        }
    }
}
