package loadtest.target;

import java.util.OptionalInt;

import org.apache.catalina.connector.Connector;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.stereotype.Component;

/**
 * SO_LINGER on the sockets the main connector accepts, from {@code TOMCAT_SO_LINGER}: empty or
 * {@code off} leaves it off (the kernel's default: close() returns at once and the FIN goes out after any unsent
 * data); a number of seconds turns it on with that time (close() waits for the peer to acknowledge
 * the FIN, at most that long); {@code 0} makes close() reset the connection (RST, no TIME-WAIT).
 *
 * <p>Only the application's connector: the management child context does not see this bean.
 */
@Component
class SoLingerCustomizer implements WebServerFactoryCustomizer<TomcatServletWebServerFactory> {

    static final String KEY = "TOMCAT_SO_LINGER";

    private final OptionalInt lingerSeconds;

    SoLingerCustomizer(@Value("${" + KEY + ":}") String soLinger) {
        this.lingerSeconds = parse(soLinger);
    }

    /** Empty or off: off; a whole number of seconds >= 0: on with that time. Anything else names the key. */
    static OptionalInt parse(String value) {
        String trimmed = value == null ? "" : value.trim();
        if (trimmed.isEmpty() || trimmed.equals("off")) {
            return OptionalInt.empty();
        }
        try {
            int seconds = Integer.parseInt(trimmed);
            if (seconds >= 0) {
                return OptionalInt.of(seconds);
            }
        } catch (NumberFormatException ignored) {
            // same message as a negative number
        }
        throw new IllegalArgumentException(KEY + " must be off (or empty) or a whole number of seconds >= 0, got '" + value + "'");
    }

    @Override
    public void customize(TomcatServletWebServerFactory factory) {
        factory.addConnectorCustomizers(this::apply);
    }

    void apply(Connector connector) {
        if (lingerSeconds.isEmpty()) {
            return;
        }
        // Tomcat sets SO_LINGER on an accepted socket only when both are set.
        connector.setProperty("socket.soLingerOn", "true");
        connector.setProperty("socket.soLingerTime", Integer.toString(lingerSeconds.getAsInt()));
    }
}
