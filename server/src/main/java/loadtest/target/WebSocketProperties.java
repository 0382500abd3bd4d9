package loadtest.target;

import java.util.Locale;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of the WebSocket job endpoint; bound from {@code ws.*} (env {@code WS_WORK_MS},
 * {@code WS_HANDLER}, {@code WS_ASYNC_THREADS}).
 *
 * @param workMs how long each job (one text message) takes before its reply is sent
 * @param handler {@code sync}: the job runs on the Tomcat thread that delivered the message;
 *     {@code async}: it runs on a separate pool and the Tomcat thread is free at once
 * @param asyncThreads threads of that pool ({@code async} only)
 */
@ConfigurationProperties("ws")
public record WebSocketProperties(long workMs, String handler, int asyncThreads) {

    /** Where a job runs. */
    public enum Mode { SYNC, ASYNC }

    public WebSocketProperties {
        if (workMs < 0) {
            throw new IllegalArgumentException("ws.work-ms (WS_WORK_MS) must be >= 0, got " + workMs);
        }
        if (asyncThreads < 1) {
            throw new IllegalArgumentException("ws.async-threads (WS_ASYNC_THREADS) must be >= 1, got " + asyncThreads);
        }
        mode(handler);
    }

    /** The handler mode; fails with the env key's name on anything but sync or async. */
    public Mode mode() {
        return mode(handler);
    }

    private static Mode mode(String handler) {
        String value = handler == null ? "" : handler.trim().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "sync" -> Mode.SYNC;
            case "async" -> Mode.ASYNC;
            default -> throw new IllegalArgumentException(
                    "ws.handler (WS_HANDLER) must be sync or async, got '" + handler + "'");
        };
    }
}
