package loadtest.target;

import java.io.IOException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.web.socket.CloseStatus;
import org.springframework.web.socket.TextMessage;
import org.springframework.web.socket.WebSocketSession;
import org.springframework.web.socket.handler.TextWebSocketHandler;

/**
 * Each text message is a job that takes {@code workMs} and is answered with {@code done <text>}.
 *
 * <p>{@link WebSocketProperties.Mode#SYNC} does the work on the Tomcat thread that delivered the
 * message, as a handler that simply computes its answer would: while it works, that thread reads
 * nothing else, so with every Tomcat thread busy other sessions' frames (their close frames
 * included) wait in the kernel. {@link WebSocketProperties.Mode#ASYNC} hands the job to an
 * executor and returns the Tomcat thread at once.
 */
public class JobWebSocketHandler extends TextWebSocketHandler {

    private static final Logger log = LoggerFactory.getLogger(JobWebSocketHandler.class);

    private final long workMs;
    private final WebSocketProperties.Mode mode;
    private final Executor executor;
    private final AtomicLong sessionsOpened = new AtomicLong();
    private final AtomicLong sessionsClosed = new AtomicLong();
    private final AtomicLong replies = new AtomicLong();
    private final AtomicLong repliesLost = new AtomicLong();

    public JobWebSocketHandler(long workMs, WebSocketProperties.Mode mode, Executor executor) {
        this.workMs = workMs;
        this.mode = mode;
        this.executor = executor;
    }

    @Override
    public void afterConnectionEstablished(WebSocketSession session) {
        sessionsOpened.incrementAndGet();
    }

    @Override
    protected void handleTextMessage(WebSocketSession session, TextMessage message) throws InterruptedException {
        String reply = "done " + message.getPayload();
        if (mode == WebSocketProperties.Mode.SYNC) {
            work();
            send(session, reply);
            return;
        }
        executor.execute(() -> {
            try {
                work();
                send(session, reply);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    @Override
    public void afterConnectionClosed(WebSocketSession session, CloseStatus status) {
        sessionsClosed.incrementAndGet();
    }

    private void work() throws InterruptedException {
        if (workMs > 0) {
            Thread.sleep(workMs);
        }
    }

    /** A session may close while its job runs (async); such a reply is counted as lost, not thrown. */
    private void send(WebSocketSession session, String reply) {
        // A WebSocket session takes one sender at a time; a client may send before its last reply.
        synchronized (session) {
            try {
                if (session.isOpen()) {
                    session.sendMessage(new TextMessage(reply));
                    replies.incrementAndGet();
                    return;
                }
            } catch (IOException | IllegalStateException e) {
                log.debug("reply to session {} lost: {}", session.getId(), e.toString());
            }
        }
        repliesLost.incrementAndGet();
    }

    /** Counts since start: sessions opened and closed, replies sent and lost. */
    public Stats stats() {
        return new Stats(mode.name().toLowerCase(java.util.Locale.ROOT), workMs,
                sessionsOpened.get(), sessionsClosed.get(), replies.get(), repliesLost.get());
    }

    public record Stats(String handler, long workMs, long sessionsOpened, long sessionsClosed,
            long replies, long repliesLost) {
    }
}
