package loadtest.target;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Settings of the plain endpoints; bound from {@code target.*} (env {@code DELAY_MS}). */
@ConfigurationProperties("target")
public record TargetProperties(long delayMs) {

    public TargetProperties {
        if (delayMs < 0 || delayMs > HelloController.MAX_DELAY_MS) {
            throw new IllegalArgumentException("target.delay-ms (DELAY_MS) must be between 0 and "
                    + HelloController.MAX_DELAY_MS + ", got " + delayMs);
        }
    }
}
