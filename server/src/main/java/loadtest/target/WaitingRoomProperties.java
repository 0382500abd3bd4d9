package loadtest.target;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Waiting-room rules; bound from {@code waiting-room.*}, which application.properties fills from the
 * {@code WAITING_ROOM_*} env vars.
 *
 * @param admitPerSecond  most admissions in any one epoch second (>= 1)
 * @param maxInside       most admitted visitors inside at once; 0 means unlimited
 * @param stayMs          how long an admitted visitor counts as inside
 * @param pollingPeriodMs the pollingPeriod told to waiting visitors
 */
@ConfigurationProperties("waiting-room")
public record WaitingRoomProperties(int admitPerSecond, int maxInside, long stayMs, long pollingPeriodMs) {

    public WaitingRoomProperties {
        require(admitPerSecond >= 1, "admit-per-second (WAITING_ROOM_ADMIT_PER_SECOND) must be >= 1");
        require(maxInside >= 0, "max-inside (WAITING_ROOM_MAX_INSIDE) must be >= 0");
        require(stayMs >= 0, "stay-ms (WAITING_ROOM_STAY_MS) must be >= 0");
        require(pollingPeriodMs >= 0, "polling-period-ms (WAITING_ROOM_POLLING_PERIOD_MS) must be >= 0");
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException("waiting-room." + message);
        }
    }
}
