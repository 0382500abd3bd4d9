package loadtest.target;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.boot.web.context.WebServerInitializedEvent;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.context.ApplicationListener;
import org.springframework.stereotype.Component;

/**
 * Logs the limits each connector really runs with, read back from Tomcat rather than from the
 * properties, so a run's log proves what a matrix cell tested (defaults and management overrides
 * included).
 */
@Component
class ConnectorSettingsLogger implements ApplicationListener<WebServerInitializedEvent> {

    private static final Logger log = LoggerFactory.getLogger(ConnectorSettingsLogger.class);

    @Override
    public void onApplicationEvent(WebServerInitializedEvent event) {
        if (!(event.getWebServer() instanceof TomcatWebServer tomcat)) {
            return;
        }
        for (Connector connector : tomcat.getTomcat().getService().findConnectors()) {
            if (connector.getProtocolHandler() instanceof AbstractHttp11Protocol<?> p) {
                log.info("connector {}: maxThreads={} minSpareThreads={} maxConnections={} acceptCount={} "
                        + "connectionTimeout={} keepAliveTimeout={} maxKeepAliveRequests={} soLinger={}",
                        p.getName(), p.getMaxThreads(), p.getMinSpareThreads(), p.getMaxConnections(),
                        p.getAcceptCount(), p.getConnectionTimeout(), p.getKeepAliveTimeout(),
                        p.getMaxKeepAliveRequests(), soLinger(p));
            }
        }
    }

    /**
     * {@code off}, or {@code on/SECONDS}: what Tomcat will set on each accepted socket (it sets
     * SO_LINGER only when both socket.soLingerOn and socket.soLingerTime are set).
     */
    static String soLinger(AbstractHttp11Protocol<?> protocol) {
        Object on = protocol.getProperty("socket.soLingerOn");
        Object time = protocol.getProperty("socket.soLingerTime");
        if (on == null || time == null || !Boolean.parseBoolean(on.toString())) {
            return "off";
        }
        return "on/" + time;
    }
}
