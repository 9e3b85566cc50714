package io.xaforward.cli;

import io.xaforward.bench.ForwardBench;
import io.xaforward.cluster.Endpoint;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.gateway.GatewayConfig;
import io.xaforward.common.ConfigWord;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.testbed.LinkLimit;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Arrays;
import java.util.Locale;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Every configuration enum reads its words by the one rule of {@link ConfigWord#parse}: each constant's word reads
 * back, white space around it and case do not matter, and a missing or unknown word is an error in the same words
 * for every enum, listing the accepted ones.
 */
class ConfigWordsTest {

    static Stream<Arguments> enums() {
        return Stream.of(
                Arguments.of("gateway mode", GatewayMode.values(), (Function<String, ?>) GatewayMode::fromName),
                Arguments.of("endpoint", Endpoint.values(), (Function<String, ?>) Endpoint::fromName),
                Arguments.of("all-reduce algorithm", Algorithm.values(), (Function<String, ?>) Algorithm::fromName),
                Arguments.of("wire security", WireSecurity.values(), (Function<String, ?>) WireSecurity::fromName),
                Arguments.of("wire dtype", WireDtype.values(), (Function<String, ?>) WireDtype::fromName),
                Arguments.of("network form", NetworkForm.values(), (Function<String, ?>) NetworkForm::fromName),
                Arguments.of("forwarding bench mode", ForwardBench.Mode.values(), (Function<String, ?>) ForwardBench.Mode::fromName),
                Arguments.of("attach mode", GatewayConfig.AttachMode.values(), (Function<String, ?>) GatewayConfig.AttachMode::fromName),
                Arguments.of("qdisc", LinkLimit.Qdisc.values(), (Function<String, ?>) LinkLimit.Qdisc::fromName));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("enums")
    void oneRuleForEveryEnum(String what, ConfigWord[] constants, Function<String, ?> fromName) {
        String words = String.join(", ", Arrays.stream(constants).map(ConfigWord::configName).toList());
        for (ConfigWord c : constants) {
            assertEquals(c, fromName.apply(c.configName()));
            assertEquals(c, fromName.apply(" " + c.configName().toUpperCase(Locale.ROOT) + "\t"), "case and white space");
        }
        for (String bad : new String[]{"warp", "", "udp,afxdp"}) {
            var e = assertThrows(IllegalArgumentException.class, () -> fromName.apply(bad));
            assertEquals("unknown " + what + " '" + bad + "'; expected one of " + words, e.getMessage());
        }
        var e = assertThrows(IllegalArgumentException.class, () -> fromName.apply(null));
        assertEquals("no " + what + " given; expected one of " + words, e.getMessage());
    }
}
