package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.web.socket.TextMessage;

/** One Tomcat thread, async jobs, SO_LINGER off. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "SERVER_ADDRESS=127.0.0.1", "MANAGEMENT_PORT=0", "server.tomcat.threads.max=1",
        "WS_HANDLER=async", "WS_WORK_MS=" + WebSocketAsyncEndpointTest.WORK_MS})
class WebSocketAsyncEndpointTest {

    static final long WORK_MS = 400;

    @LocalServerPort
    int port;

    @Test
    void asyncJobsLeaveTheThreadFreeSoBothRunAtOnce() throws Exception {
        WebSocketEndpointSupport.Client first = WebSocketEndpointSupport.Client.open(port);
        WebSocketEndpointSupport.Client second = WebSocketEndpointSupport.Client.open(port);
        long start = System.nanoTime();
        first.session.sendMessage(new TextMessage("a"));
        second.session.sendMessage(new TextMessage("b"));
        assertThat(first.nextReply()).isEqualTo("done a");
        assertThat(second.nextReply()).isEqualTo("done b");
        long firstMs = TimeUnit.NANOSECONDS.toMillis(first.replyNanos.take() - start);
        long secondMs = TimeUnit.NANOSECONDS.toMillis(second.replyNanos.take() - start);
        assertThat(Math.min(firstMs, secondMs)).isGreaterThanOrEqualTo(WORK_MS);
        // In parallel on the pool, not one after the other on the one Tomcat thread.
        assertThat(Math.max(firstMs, secondMs)).isLessThan(2 * WORK_MS);
        first.session.close();
        second.session.close();
    }

    @Test
    void lingerOffClosesWithAFin() throws Exception {
        assertThat(WebSocketEndpointSupport.howTheServerCloses(port)).isEqualTo("eof");
    }
}
