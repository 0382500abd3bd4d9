package loadtest.target;

import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
class HelloController {

    /** The longest delay a request may ask for: a minute, well past any cell's request timeout. */
    static final long MAX_DELAY_MS = 60_000;

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
        long delay;
        try {
            delay = Long.parseLong(value.trim());
        } catch (NumberFormatException ex) {
            delay = -1; // same answer as a negative number
        }
        if (delay < 0) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "delayMs must be a non-negative integer, got '" + value + "'");
        }
        if (delay > MAX_DELAY_MS) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "delayMs must be at most " + MAX_DELAY_MS + ", got " + delay);
        }
        return delay;
    }
}
