package loadtest.target;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.LongSupplier;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

/**
 * FIFO waiting room with a per-epoch-second admission budget and an optional cap on visitors inside.
 *
 * <p>Admission is lazy: it runs whenever a visitor registers or polls, so no background thread is
 * needed and the budget can only be spent while clients are active. All state sits behind one
 * monitor; each call does O(1) work plus at most {@code admitPerSecond} admissions, which keeps the
 * lock short even with thousands of concurrent pollers, and makes the invariants trivially hold.
 */
@Component
public class WaitingRoom {

    /** What {@code /api/wait} and {@code /api/entry} answer. */
    public record Ticket(String token, boolean canEnter, long position, long pollingPeriod) {}

    /** What {@code /api/waiting-room/stats} answers; {@code admissionsPerSecond} is keyed by epoch second. */
    public record Stats(long registered, long admitted, long waiting, int inside, int admitPerSecond,
            int maxInside, long stayMs, long pollingPeriod, int maxAdmittedInOneSecond, int maxInsideObserved,
            Map<Long, Integer> admissionsPerSecond) {}

    private static final class Visitor {
        final String token;
        final long seq;
        boolean admitted;

        Visitor(String token, long seq) {
            this.token = token;
            this.seq = seq;
        }
    }

    private final WaitingRoomProperties rules;
    private final LongSupplier clock;

    private final Map<String, Visitor> visitors = new HashMap<>();
    private final ArrayDeque<Visitor> queue = new ArrayDeque<>();
    /** Exit times of admitted visitors still inside, oldest first. */
    private final ArrayDeque<Long> insideUntil = new ArrayDeque<>();
    private final TreeMap<Long, Integer> admissionsPerSecond = new TreeMap<>();
    private long registered;
    private long admitted;
    private long lastNow;
    private int maxAdmittedInOneSecond;
    private int maxInsideObserved;

    @Autowired
    public WaitingRoom(WaitingRoomProperties rules) {
        this(rules, System::currentTimeMillis);
    }

    WaitingRoom(WaitingRoomProperties rules, LongSupplier clockMillis) {
        this.rules = rules;
        this.clock = clockMillis;
    }

    public Ticket register() {
        String token = UUID.randomUUID().toString(); // SecureRandom: keep it out of the lock
        synchronized (this) {
            Visitor visitor = new Visitor(token, ++registered);
            visitors.put(token, visitor);
            queue.addLast(visitor);
            admitDue();
            return ticketOf(visitor);
        }
    }

    /** The visitor's current ticket, or empty when the token is unknown (never issued, or reset since). */
    public synchronized Optional<Ticket> check(String token) {
        Visitor visitor = visitors.get(token);
        if (visitor == null) {
            return Optional.empty();
        }
        admitDue();
        return Optional.of(ticketOf(visitor));
    }

    public synchronized Stats stats() {
        long now = Math.max(clock.getAsLong(), lastNow);
        int inside = (int) insideUntil.stream().filter(until -> until > now).count();
        return new Stats(registered, admitted, queue.size(), inside, rules.admitPerSecond(), rules.maxInside(),
                rules.stayMs(), rules.pollingPeriodMs(), maxAdmittedInOneSecond, maxInsideObserved,
                new TreeMap<>(admissionsPerSecond));
    }

    public synchronized void reset() {
        visitors.clear();
        queue.clear();
        insideUntil.clear();
        admissionsPerSecond.clear();
        registered = 0;
        admitted = 0;
        maxAdmittedInOneSecond = 0;
        maxInsideObserved = 0;
    }

    private void admitDue() {
        // Never let time run backwards, so exit times stay sorted and the head of insideUntil leaves first.
        long now = Math.max(clock.getAsLong(), lastNow);
        lastNow = now;
        while (!insideUntil.isEmpty() && insideUntil.peekFirst() <= now) {
            insideUntil.pollFirst();
        }
        long second = Math.floorDiv(now, 1000L);
        int spent = admissionsPerSecond.getOrDefault(second, 0);
        int before = spent;
        while (!queue.isEmpty() && spent < rules.admitPerSecond()
                && (rules.maxInside() == 0 || insideUntil.size() < rules.maxInside())) {
            queue.pollFirst().admitted = true;
            insideUntil.addLast(now + rules.stayMs());
            admitted++;
            spent++;
        }
        if (spent > before) {
            admissionsPerSecond.put(second, spent);
            maxAdmittedInOneSecond = Math.max(maxAdmittedInOneSecond, spent);
            maxInsideObserved = Math.max(maxInsideObserved, insideUntil.size());
        }
    }

    private Ticket ticketOf(Visitor visitor) {
        // Admission is strictly FIFO, so exactly visitors 1..admitted are in and the rest queue in seq order.
        long position = visitor.admitted ? 0 : visitor.seq - admitted;
        return new Ticket(visitor.token, visitor.admitted, position, rules.pollingPeriodMs());
    }
}
