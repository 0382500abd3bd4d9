package loadtest.target;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.socket.config.annotation.EnableWebSocket;
import org.springframework.web.socket.config.annotation.WebSocketConfigurer;
import org.springframework.web.socket.config.annotation.WebSocketHandlerRegistry;

/** The WebSocket job endpoint at {@code /ws}, and its counts at {@code GET /ws/stats}. */
@Configuration(proxyBeanMethods = false)
@EnableWebSocket
class WebSocketConfig implements WebSocketConfigurer {

    static final String PATH = "/ws";

    private final JobWebSocketHandler handler;

    WebSocketConfig(JobWebSocketHandler handler) {
        this.handler = handler;
    }

    @Override
    public void registerWebSocketHandlers(WebSocketHandlerRegistry registry) {
        registry.addHandler(handler, PATH);
    }

    @Bean(destroyMethod = "shutdownNow")
    static ExecutorService webSocketJobExecutor(WebSocketProperties properties) {
        AtomicInteger number = new AtomicInteger();
        ThreadFactory threads = runnable -> {
            Thread thread = new Thread(runnable, "ws-job-" + number.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
        return Executors.newFixedThreadPool(properties.asyncThreads(), threads);
    }

    @Bean
    static JobWebSocketHandler jobWebSocketHandler(WebSocketProperties properties, ExecutorService webSocketJobExecutor) {
        return new JobWebSocketHandler(properties.workMs(), properties.mode(), webSocketJobExecutor);
    }

    @RestController
    static class StatsController {

        private final JobWebSocketHandler handler;

        StatsController(JobWebSocketHandler handler) {
            this.handler = handler;
        }

        @GetMapping(PATH + "/stats")
        JobWebSocketHandler.Stats stats() {
            return handler.stats();
        }
    }
}
