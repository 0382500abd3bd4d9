package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

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
        long[] ms = WebSocketEndpointSupport.twoJobsAtOnce(port);
        assertThat(Math.min(ms[0], ms[1])).isGreaterThanOrEqualTo(WORK_MS);
        // In parallel on the pool, not one after the other on the one Tomcat thread.
        assertThat(Math.max(ms[0], ms[1])).isLessThan(2 * WORK_MS);
    }

    @Test
    void lingerOffClosesWithAFin() throws Exception {
        assertThat(WebSocketEndpointSupport.howTheServerCloses(port)).isEqualTo("eof");
    }
}
