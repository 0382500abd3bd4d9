package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.web.socket.TextMessage;
import org.springframework.web.socket.WebSocketSession;

/** The two handler modes on a stand-in session: where the job runs and when the reply goes. */
class JobWebSocketHandlerTest {

    private static final long WORK_MS = 200;

    private final ExecutorService executor = Executors.newFixedThreadPool(2);

    /** Each reply sent: its text and the thread that sent it. */
    private final BlockingQueue<String[]> sent = new ArrayBlockingQueue<>(10);

    @AfterEach
    void stop() {
        executor.shutdownNow();
    }

    private WebSocketSession openSession() throws Exception {
        WebSocketSession session = mock(WebSocketSession.class);
        when(session.isOpen()).thenReturn(true);
        when(session.getId()).thenReturn("s1");
        doAnswer(call -> {
            TextMessage message = call.getArgument(0);
            sent.add(new String[] {message.getPayload(), Thread.currentThread().getName()});
            return null;
        }).when(session).sendMessage(any());
        return session;
    }

    @Test
    void syncWorksAndRepliesOnTheDeliveringThread() throws Exception {
        JobWebSocketHandler handler = new JobWebSocketHandler(WORK_MS, WebSocketProperties.Mode.SYNC, executor);
        WebSocketSession session = openSession();
        long start = System.nanoTime();
        handler.handleMessage(session, new TextMessage("job-1"));
        Duration held = Duration.ofNanos(System.nanoTime() - start);

        assertThat(held).as("the delivering thread is held for the work").isGreaterThanOrEqualTo(Duration.ofMillis(WORK_MS));
        String[] reply = sent.poll();
        assertThat(reply).as("replied before returning").isNotNull();
        assertThat(reply[0]).isEqualTo("done job-1");
        assertThat(reply[1]).isEqualTo(Thread.currentThread().getName());
        assertThat(handler.stats().replies()).isEqualTo(1);
    }

    @Test
    void asyncReturnsAtOnceAndRepliesFromThePool() throws Exception {
        JobWebSocketHandler handler = new JobWebSocketHandler(WORK_MS, WebSocketProperties.Mode.ASYNC, executor);
        WebSocketSession session = openSession();
        long start = System.nanoTime();
        handler.handleMessage(session, new TextMessage("job-2"));
        Duration held = Duration.ofNanos(System.nanoTime() - start);

        assertThat(held).as("the delivering thread is free at once").isLessThan(Duration.ofMillis(WORK_MS / 2));
        assertThat(sent).isEmpty();
        String[] reply = sent.poll(5, TimeUnit.SECONDS);
        assertThat(reply).isNotNull();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(WORK_MS));
        assertThat(reply[0]).isEqualTo("done job-2");
        assertThat(reply[1]).isNotEqualTo(Thread.currentThread().getName());
    }

    @Test
    void aReplyToAClosedSessionIsCountedAsLost() throws Exception {
        JobWebSocketHandler handler = new JobWebSocketHandler(0, WebSocketProperties.Mode.SYNC, executor);
        WebSocketSession session = mock(WebSocketSession.class);
        when(session.isOpen()).thenReturn(false);
        handler.handleMessage(session, new TextMessage("late"));
        verify(session, never()).sendMessage(any());
        assertThat(handler.stats().repliesLost()).isEqualTo(1);
        assertThat(handler.stats().replies()).isZero();
    }

    @Test
    void propertiesNameTheEnvKeyOfABadValue() {
        assertThat(new WebSocketProperties(0, " Async ", 1).mode()).isEqualTo(WebSocketProperties.Mode.ASYNC);
        assertThatThrownBy(() -> new WebSocketProperties(0, "threads", 1))
                .hasMessageContaining("WS_HANDLER").hasMessageContaining("'threads'");
        assertThatThrownBy(() -> new WebSocketProperties(-1, "sync", 1)).hasMessageContaining("WS_WORK_MS");
        assertThatThrownBy(() -> new WebSocketProperties(0, "sync", 0)).hasMessageContaining("WS_ASYNC_THREADS");
    }
}
