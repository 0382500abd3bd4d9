package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;

/** Starts the real app with the main connector squeezed to one connection and one thread. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "SERVER_ADDRESS=127.0.0.1", "MANAGEMENT_PORT=0",
        "server.tomcat.max-connections=1", "server.tomcat.accept-count=1", "server.tomcat.threads.max=1",
        "WAITING_ROOM_ADMIT_PER_SECOND=1", "WAITING_ROOM_POLLING_PERIOD_MS=250"})
class TargetApplicationTest {

    /**
     * One client for all tests: with maxConnections=1 an idle keep-alive connection left in another
     * client's pool would hold the only slot, which is the very effect the suite measures.
     */
    private static final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(3))
            .build();

    @LocalServerPort
    int port;

    @LocalManagementPort
    int managementPort;

    @Autowired
    ObjectMapper json;

    private HttpResponse<String> send(int toPort, String method, String path, String body) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + toPort + path))
                .timeout(Duration.ofSeconds(5))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode jsonOf(HttpResponse<String> response) throws IOException {
        return json.readTree(response.body());
    }

    @Test
    void helloHonoursAndValidatesDelay() throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> slow = send(port, "GET", "/hello?delayMs=300", null);
        assertThat(slow.statusCode()).isEqualTo(200);
        assertThat(slow.body()).isEqualTo("hello");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));

        for (String bad : List.of("-1", "abc", "1.5", String.valueOf(HelloController.MAX_DELAY_MS + 1))) {
            HttpResponse<String> response = send(port, "GET", "/hello?delayMs=" + bad, null);
            assertThat(response.statusCode()).isEqualTo(400);
            assertThat(jsonOf(response).path("error").asText()).contains("delayMs");
        }
        HttpResponse<String> tooLong = send(port, "GET", "/hello?delayMs=86400000", null);
        assertThat(jsonOf(tooLong).path("error").asText()).isEqualTo("delayMs must be at most 60000, got 86400000");
        assertThat(send(port, "GET", "/health", null).body()).isEqualTo("ok");
    }

    /** Emptying the room is an operator's act: only on the management connector, never on the port under load. */
    @Test
    void waitingRoomResetsOnlyFromTheManagementPort() throws Exception {
        send(port, "POST", "/api/wait", null);
        long before = jsonOf(send(port, "GET", "/api/waiting-room/stats", null)).path("registered").asLong();
        assertThat(before).isPositive();

        assertThat(send(port, "POST", "/api/waiting-room/reset", null).statusCode()).isEqualTo(404);
        assertThat(send(port, "POST", "/actuator/waitingroom", null).statusCode()).isEqualTo(404);
        assertThat(jsonOf(send(port, "GET", "/api/waiting-room/stats", null)).path("registered").asLong())
                .isGreaterThanOrEqualTo(before);

        HttpResponse<String> reset = send(managementPort, "POST", "/actuator/waitingroom", null);
        assertThat(reset.statusCode()).isEqualTo(200);
        assertThat(jsonOf(reset).path("registered").asLong()).isZero();
        assertThat(jsonOf(send(port, "GET", "/api/waiting-room/stats", null)).path("registered").asLong()).isZero();
    }

    @Test
    void waitingRoomOverHttp() throws Exception {
        assertThat(send(managementPort, "POST", "/actuator/waitingroom", null).statusCode()).isEqualTo(200);
        JsonNode first = jsonOf(send(port, "POST", "/api/wait", null));
        JsonNode second = jsonOf(send(port, "POST", "/api/wait", null));
        assertThat(first.path("canEnter").asBoolean()).isTrue();
        // One admission per second: unless the second ticked over in between, the next visitor waits.
        if (!second.path("canEnter").asBoolean()) {
            assertThat(second.path("position").asLong()).isEqualTo(1);
            assertThat(second.path("pollingPeriod").asLong()).isEqualTo(250);
        }

        String body = "{\"token\":\"" + first.path("token").asText() + "\"}";
        HttpResponse<String> entry = send(port, "POST", "/api/entry", body);
        assertThat(entry.statusCode()).isEqualTo(200);
        assertThat(jsonOf(entry).path("canEnter").asBoolean()).isTrue();

        assertThat(send(port, "POST", "/api/entry", "{\"token\":\"nope\"}").statusCode()).isEqualTo(404);
        assertThat(send(port, "POST", "/api/entry", "{}").statusCode()).isEqualTo(400);
        assertThat(send(port, "POST", "/api/entry", null).statusCode()).isEqualTo(400);
        HttpResponse<String> malformed = send(port, "POST", "/api/entry", "{\"token\":");
        assertThat(malformed.statusCode()).isEqualTo(400);
        assertThat(jsonOf(malformed).path("error").asText()).isEqualTo("malformed JSON body");

        JsonNode stats = jsonOf(send(port, "GET", "/api/waiting-room/stats", null));
        assertThat(stats.path("registered").asLong()).isEqualTo(2);
        assertThat(stats.path("admitPerSecond").asInt()).isEqualTo(1);
        assertThat(stats.path("maxAdmittedInOneSecond").asInt()).isEqualTo(1);
        assertThat(stats.has("admissionsPerSecond")).isTrue();
    }

    /** Parked connections would starve a management connector that inherited maxConnections=1. */
    @Test
    void managementConnectorKeepsItsOwnLimits() throws Exception {
        List<Socket> parked = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Socket socket = new Socket();
                socket.connect(new InetSocketAddress("127.0.0.1", managementPort), 1000);
                parked.add(socket);
            }
            assertThat(send(managementPort, "GET", "/actuator/health", null).statusCode()).isEqualTo(200);
            JsonNode maxThreads = jsonOf(send(managementPort, "GET", "/actuator/metrics/tomcat.threads.config.max", null));
            assertThat(maxThreads.at("/measurements/0/value").asDouble()).as("the main connector's value").isEqualTo(1.0);
            assertThat(maxThreads.at("/availableTags/0/values/0").asText()).startsWith("http-nio-127.0.0.1-");
        } finally {
            for (Socket socket : parked) {
                socket.close();
            }
        }
    }
}
