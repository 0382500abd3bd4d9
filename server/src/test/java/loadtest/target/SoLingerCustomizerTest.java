package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;

/** TOMCAT_SO_LINGER to the connector's socket properties, read back the way the log line reads them. */
class SoLingerCustomizerTest {

    private static String applied(String setting) {
        Connector connector = new Connector("HTTP/1.1");
        new SoLingerCustomizer(setting).apply(connector);
        return ConnectorSettingsLogger.soLinger((AbstractHttp11Protocol<?>) connector.getProtocolHandler());
    }

    @Test
    void emptyLeavesLingerOff() {
        assertThat(applied("")).isEqualTo("off");
        assertThat(applied(null)).isEqualTo("off");
        assertThat(applied("  ")).isEqualTo("off");
        assertThat(applied("off")).isEqualTo("off");
    }

    @Test
    void aNumberTurnsItOnWithThatTime() {
        assertThat(applied("0")).isEqualTo("on/0");
        assertThat(applied("5")).isEqualTo("on/5");
        Connector connector = new Connector("HTTP/1.1");
        new SoLingerCustomizer("3").apply(connector);
        assertThat(connector.getProperty("socket.soLingerOn")).hasToString("true");
        assertThat(connector.getProperty("socket.soLingerTime")).hasToString("3");
    }

    @Test
    void anythingElseIsRefusedWithTheKey() {
        for (String bad : new String[] {"-1", "on", "1.5", "5s"}) {
            assertThatThrownBy(() -> new SoLingerCustomizer(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("TOMCAT_SO_LINGER").hasMessageContaining("'" + bad + "'");
        }
    }
}
