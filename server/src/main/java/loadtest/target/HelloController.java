package loadtest.target;

import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
class HelloController {

    private final long defaultDelayMs;

    HelloController(TargetProperties properties) {
        this.defaultDelayMs = properties.delayMs();
    }

    /** Holds a Tomcat worker thread for the delay, which is the point: it makes the thread pool the bottleneck. */
    @GetMapping("/hello")
    String hello(@RequestParam(required = false) String delayMs) throws InterruptedException {
        long delay = delayMs == null ? defaultDelayMs : parseDelay(delayMs);
        if (delay > 0) {
            Thread.sleep(delay);
        }
        return "hello";
    }

    @GetMapping("/health")
    String health() {
        return "ok";
    }

    private static long parseDelay(String value) {
        try {
            long delay = Long.parseLong(value.trim());
            if (delay >= 0) {
                return delay;
            }
        } catch (NumberFormatException ignored) {
            // same answer as a negative number
        }
        throw new ApiException(HttpStatus.BAD_REQUEST, "delayMs must be a non-negative integer, got '" + value + "'");
    }
}
