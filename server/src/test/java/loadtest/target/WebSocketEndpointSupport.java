package loadtest.target;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.springframework.web.socket.TextMessage;
import org.springframework.web.socket.WebSocketHttpHeaders;
import org.springframework.web.socket.WebSocketSession;
import org.springframework.web.socket.client.standard.StandardWebSocketClient;
import org.springframework.web.socket.handler.TextWebSocketHandler;

/** A real WebSocket client and a raw HTTP exchange against the started app. */
final class WebSocketEndpointSupport {

    private WebSocketEndpointSupport() {
    }

    /** One client session that records when each reply arrived. */
    static final class Client extends TextWebSocketHandler {
        final BlockingQueue<Long> replyNanos = new LinkedBlockingQueue<>();
        final BlockingQueue<String> replies = new LinkedBlockingQueue<>();
        WebSocketSession session;

        static Client open(int port) throws Exception {
            Client client = new Client();
            client.session = new StandardWebSocketClient()
                    .execute(client, new WebSocketHttpHeaders(), URI.create("ws://127.0.0.1:" + port + WebSocketConfig.PATH))
                    .get(5, TimeUnit.SECONDS);
            return client;
        }

        @Override
        protected void handleTextMessage(WebSocketSession session, TextMessage message) {
            replyNanos.add(System.nanoTime());
            replies.add(message.getPayload());
        }

        String nextReply() throws InterruptedException {
            return replies.poll(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Two sessions send one job each at the same moment; returns when each reply came, in ms after
     * the sends, {first, second}, having checked the replies and closed both sessions.
     */
    static long[] twoJobsAtOnce(int port) throws Exception {
        Client first = Client.open(port);
        Client second = Client.open(port);
        long start = System.nanoTime();
        first.session.sendMessage(new TextMessage("a"));
        second.session.sendMessage(new TextMessage("b"));
        if (!"done a".equals(first.nextReply()) || !"done b".equals(second.nextReply())) {
            throw new AssertionError("a job was not answered with its own reply");
        }
        long firstMs = TimeUnit.NANOSECONDS.toMillis(first.replyNanos.take() - start);
        long secondMs = TimeUnit.NANOSECONDS.toMillis(second.replyNanos.take() - start);
        first.session.close();
        second.session.close();
        return new long[] {firstMs, secondMs};
    }

    /**
     * How the server ends a "Connection: close" exchange: "eof" for an orderly FIN, "reset" for an
     * RST (after the response was read either way).
     */
    static String howTheServerCloses(int port) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 2000);
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(
                    "GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream response = new ByteArrayOutputStream();
            byte[] buffer = new byte[4096];
            try {
                for (int n; (n = in.read(buffer)) >= 0;) {
                    response.write(buffer, 0, n);
                }
            } catch (SocketException e) {
                if (!response.toString(StandardCharsets.US_ASCII).endsWith("ok")) {
                    throw e;
                }
                return "reset";
            }
            return response.toString(StandardCharsets.US_ASCII).endsWith("ok") ? "eof" : "short: " + response;
        }
    }
}
