package loadtest.management;

import org.apache.coyote.http11.AbstractHttp11Protocol;

import org.springframework.boot.actuate.autoconfigure.web.ManagementContextConfiguration;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextType;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/**
 * Gives the management connector fixed, modest limits of its own.
 *
 * <p>The management child context re-applies {@code server.tomcat.*} to its own Tomcat, so a matrix
 * cell with e.g. {@code TOMCAT_MAX_CONNECTIONS=1} would otherwise starve the very endpoint used to
 * watch the main connector. This lives outside the component-scanned package on purpose: it must
 * only be loaded into the child context (see META-INF/spring/...ManagementContextConfiguration.imports).
 */
@ManagementContextConfiguration(value = ManagementContextType.CHILD, proxyBeanMethods = false)
public class ManagementServerLimits {

    static final int MAX_THREADS = 8;
    static final int MIN_SPARE_THREADS = 1;
    static final int MAX_CONNECTIONS = 64;
    static final int ACCEPT_COUNT = 64;
    static final int TIMEOUT_MS = 20_000;

    @Bean
    WebServerFactoryCustomizer<TomcatServletWebServerFactory> managementConnectorLimits() {
        return new LimitsCustomizer();
    }

    /** Ordered last so its connector customizer runs after the one built from server.tomcat.*. */
    static final class LimitsCustomizer implements WebServerFactoryCustomizer<TomcatServletWebServerFactory>, Ordered {

        @Override
        public void customize(TomcatServletWebServerFactory factory) {
            factory.addConnectorCustomizers(connector -> {
                if (connector.getProtocolHandler() instanceof AbstractHttp11Protocol<?> protocol) {
                    protocol.setMaxThreads(MAX_THREADS);
                    protocol.setMinSpareThreads(MIN_SPARE_THREADS);
                    protocol.setMaxConnections(MAX_CONNECTIONS);
                    protocol.setAcceptCount(ACCEPT_COUNT);
                    protocol.setConnectionTimeout(TIMEOUT_MS);
                    protocol.setKeepAliveTimeout(TIMEOUT_MS);
                    protocol.setMaxKeepAliveRequests(100);
                }
            });
        }

        @Override
        public int getOrder() {
            return Ordered.LOWEST_PRECEDENCE;
        }
    }
}
