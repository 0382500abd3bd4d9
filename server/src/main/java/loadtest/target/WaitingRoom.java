package loadtest.target;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.LongSupplier;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

/**
 * FIFO waiting room with an admission budget per sliding second and an optional cap on visitors inside.
 *
 * <p>Admission is lazy: it runs whenever a visitor registers or polls, so no background thread is
 * needed and the budget can only be spent while clients are active. All state sits behind one
 * monitor; each call does O(1) amortised work plus at most {@code admitPerSecond} admissions, which
 * keeps the lock short even with thousands of concurrent pollers, and makes the invariants hold:
 *
 * <ul>
 *   <li>no 1000 ms window (of the room's clock) holds more than {@code admitPerSecond} admissions;
 *   <li>a visitor not heard from (register or poll) for {@link #giveUpAfterMs()} has given up: it is
 *       forgotten (its token becomes unknown) and, if still waiting, never admitted;
 *   <li>at most {@link #MAX_VISITORS} visitors are known at once; beyond that a registration is refused.
 * </ul>
 */
@Component
public class WaitingRoom {

    /** Most visitors known at once (waiting, or admitted and still polling); about 200 bytes each. */
    static final int MAX_VISITORS = 200_000;
    /** The shortest silence after which a visitor counts as gone, whatever the polling period. */
    static final long MIN_GIVE_UP_AFTER_MS = 5_000;
    /** A visitor that misses this many polling periods in a row counts as gone. */
    static final int MISSED_POLLS_TO_GIVE_UP = 3;
    private static final long WINDOW_MS = 1_000;

    /**
     * What {@code /api/wait} and {@code /api/entry} answer. {@code position} is 0 once admitted, else
     * the visitor's place by number, counting those ahead who gave up but have not left the line yet.
     */
    public record Ticket(String token, boolean canEnter, long position, long pollingPeriod) {}

    /**
     * What {@code /api/waiting-room/stats} answers. {@code admissionsPerSecond} is keyed by epoch second;
     * {@code maxAdmittedInOneSecond} is the most admissions seen in any sliding 1000 ms window;
     * {@code gaveUp} counts visitors forgotten after {@code giveUpAfterMs} without a poll while waiting;
     * {@code waiting} counts the visitors still waiting, not those who gave up.
     */
    public record Stats(long registered, long admitted, long waiting, int inside, int admitPerSecond,
            int maxInside, long stayMs, long pollingPeriod, int maxAdmittedInOneSecond, int maxInsideObserved,
            Map<Long, Integer> admissionsPerSecond, long gaveUp, long known, long giveUpAfterMs) {}

    private static final class Visitor {
        final String token;
        final long seq;
        boolean admitted;
        boolean gone;
        long lastSeen;

        Visitor(String token, long seq, long now) {
            this.token = token;
            this.seq = seq;
            this.lastSeen = now;
        }
    }

    private final WaitingRoomProperties rules;
    private final LongSupplier clock;
    private final long giveUpAfterMs;

    /** Known visitors, least recently heard from first (access order). */
    private final LinkedHashMap<String, Visitor> visitors = new LinkedHashMap<>(16, 0.75f, true);
    /** Waiting visitors in arrival order; those that gave up leave it when they reach its head. */
    private final ArrayDeque<Visitor> queue = new ArrayDeque<>();
    /** Exit times of admitted visitors still inside, oldest first. */
    private final ArrayDeque<Long> insideUntil = new ArrayDeque<>();
    /** Times of the admissions of the last 1000 ms, oldest first. */
    private final ArrayDeque<Long> recentAdmissions = new ArrayDeque<>();
    private final TreeMap<Long, Integer> admissionsPerSecond = new TreeMap<>();
    private long registered;
    private long admitted;
    /** Visitors that have left the head of the queue (admitted or gone): seq 1..dequeued. */
    private long dequeued;
    private long gaveUp;
    /** Visitors that gave up while waiting and have not reached the head of the queue yet. */
    private long goneInQueue;
    private long lastNow;
    private int maxAdmittedInOneSecond;
    private int maxInsideObserved;

    @Autowired
    public WaitingRoom(WaitingRoomProperties rules) {
        this(rules, System::currentTimeMillis);
    }

    WaitingRoom(WaitingRoomProperties rules, LongSupplier clockMillis) {
        this(rules, clockMillis,
                Math.max(MIN_GIVE_UP_AFTER_MS, MISSED_POLLS_TO_GIVE_UP * rules.pollingPeriodMs()));
    }

    WaitingRoom(WaitingRoomProperties rules, LongSupplier clockMillis, long giveUpAfterMs) {
        this.rules = rules;
        this.clock = clockMillis;
        this.giveUpAfterMs = giveUpAfterMs;
    }

    /** How long a visitor may stay silent before it counts as gone. */
    public long giveUpAfterMs() {
        return giveUpAfterMs;
    }

    /** A new visitor at the back of the line; 503 when {@link #MAX_VISITORS} are known already. */
    public Ticket register() {
        String token = UUID.randomUUID().toString(); // SecureRandom: keep it out of the lock
        synchronized (this) {
            long now = tick();
            if (visitors.size() >= MAX_VISITORS || queue.size() >= MAX_VISITORS) {
                throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE,
                        "waiting room full: " + MAX_VISITORS + " visitors known");
            }
            Visitor visitor = new Visitor(token, ++registered, now);
            visitors.put(token, visitor);
            queue.addLast(visitor);
            admitDue(now);
            return ticketOf(visitor);
        }
    }

    /**
     * The visitor's current ticket, or empty when the token is unknown: never issued, reset since, or
     * silent for longer than {@link #giveUpAfterMs()}.
     */
    public synchronized Optional<Ticket> check(String token) {
        long now = tick();
        Visitor visitor = visitors.get(token); // access order: it is now the most recently heard from
        if (visitor == null) {
            return Optional.empty();
        }
        visitor.lastSeen = now;
        admitDue(now);
        return Optional.of(ticketOf(visitor));
    }

    public synchronized Stats stats() {
        long now = tick();
        int inside = (int) insideUntil.stream().filter(until -> until > now).count();
        return new Stats(registered, admitted, registered - dequeued - goneInQueue, inside, rules.admitPerSecond(),
                rules.maxInside(), rules.stayMs(), rules.pollingPeriodMs(), maxAdmittedInOneSecond,
                maxInsideObserved, new TreeMap<>(admissionsPerSecond), gaveUp, visitors.size(), giveUpAfterMs);
    }

    public synchronized void reset() {
        visitors.clear();
        queue.clear();
        insideUntil.clear();
        recentAdmissions.clear();
        admissionsPerSecond.clear();
        registered = 0;
        admitted = 0;
        dequeued = 0;
        gaveUp = 0;
        goneInQueue = 0;
        maxAdmittedInOneSecond = 0;
        maxInsideObserved = 0;
    }

    /** The room's time, never running backwards (so every deque stays sorted); forgets the silent. */
    private long tick() {
        long now = Math.max(clock.getAsLong(), lastNow);
        lastNow = now;
        Iterator<Visitor> oldest = visitors.values().iterator();
        while (oldest.hasNext()) {
            Visitor visitor = oldest.next();
            if (now - visitor.lastSeen < giveUpAfterMs) {
                break;
            }
            oldest.remove();
            if (!visitor.admitted) {
                visitor.gone = true;
                gaveUp++;
                goneInQueue++;
            }
        }
        return now;
    }

    private void admitDue(long now) {
        while (!insideUntil.isEmpty() && insideUntil.peekFirst() <= now) {
            insideUntil.pollFirst();
        }
        while (!recentAdmissions.isEmpty() && recentAdmissions.peekFirst() <= now - WINDOW_MS) {
            recentAdmissions.pollFirst();
        }
        long second = Math.floorDiv(now, 1000L);
        int admittedNow = 0;
        while (!queue.isEmpty() && recentAdmissions.size() < rules.admitPerSecond()
                && (rules.maxInside() == 0 || insideUntil.size() < rules.maxInside())) {
            Visitor next = queue.pollFirst();
            dequeued++;
            if (next.gone) {
                goneInQueue--;
                continue; // gave up while waiting: never admitted, spends no budget
            }
            next.admitted = true;
            insideUntil.addLast(now + rules.stayMs());
            recentAdmissions.addLast(now);
            admitted++;
            admittedNow++;
        }
        if (admittedNow > 0) {
            admissionsPerSecond.merge(second, admittedNow, Integer::sum);
            maxAdmittedInOneSecond = Math.max(maxAdmittedInOneSecond, recentAdmissions.size());
            maxInsideObserved = Math.max(maxInsideObserved, insideUntil.size());
        }
    }

    private Ticket ticketOf(Visitor visitor) {
        // Strictly FIFO: the visitors with seq 1..dequeued have left the line, the rest wait in seq order.
        // Like the number on a paper ticket, the position counts everyone ahead by number, including
        // visitors who gave up and have not reached the head yet (they leave it without being admitted).
        long position = visitor.admitted ? 0 : visitor.seq - dequeued;
        return new Ticket(visitor.token, visitor.admitted, position, rules.pollingPeriodMs());
    }
}
