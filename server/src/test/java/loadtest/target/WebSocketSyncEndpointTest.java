package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.web.socket.TextMessage;

/** One Tomcat thread, sync jobs, SO_LINGER 0: the real connector and endpoint. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "SERVER_ADDRESS=127.0.0.1", "MANAGEMENT_PORT=0", "server.tomcat.threads.max=1",
        "WS_HANDLER=sync", "WS_WORK_MS=" + WebSocketSyncEndpointTest.WORK_MS, "TOMCAT_SO_LINGER=0"})
class WebSocketSyncEndpointTest {

    static final long WORK_MS = 400;

    @LocalServerPort
    int port;

    @Autowired
    ServletWebServerApplicationContext context;

    @Test
    void aSyncJobHoldsTheOnlyThreadSoTheOtherSessionWaits() throws Exception {
        long[] ms = WebSocketEndpointSupport.twoJobsAtOnce(port);
        // One thread runs the two jobs one after the other.
        assertThat(Math.max(ms[0], ms[1])).isGreaterThanOrEqualTo(2 * WORK_MS);
    }

    @Test
    void lingerZeroIsOnTheMainConnectorAndResetsOnClose() throws Exception {
        Connector connector = ((TomcatWebServer) context.getWebServer()).getTomcat().getConnector();
        assertThat(ConnectorSettingsLogger.soLinger((AbstractHttp11Protocol<?>) connector.getProtocolHandler()))
                .isEqualTo("on/0");
        assertThat(WebSocketEndpointSupport.howTheServerCloses(port)).isEqualTo("reset");
    }

    @Test
    void statsCountSessionsAndReplies() throws Exception {
        WebSocketEndpointSupport.Client client = WebSocketEndpointSupport.Client.open(port);
        client.session.sendMessage(new TextMessage("x"));
        assertThat(client.nextReply()).isEqualTo("done x");
        client.session.close();
        JobWebSocketHandler handler = context.getBean(JobWebSocketHandler.class);
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        while (handler.stats().sessionsClosed() < handler.stats().sessionsOpened() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        JobWebSocketHandler.Stats stats = handler.stats();
        assertThat(stats.handler()).isEqualTo("sync");
        assertThat(stats.sessionsOpened()).isEqualTo(stats.sessionsClosed()).isPositive();
        assertThat(stats.replies()).isPositive();
        assertThat(stats.repliesLost()).isZero();
    }
}
