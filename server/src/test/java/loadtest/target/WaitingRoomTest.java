package loadtest.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.LongStream;

import org.junit.jupiter.api.Test;

class WaitingRoomTest {

    /** A whole epoch second, so the test's seconds line up with the room's calendar seconds. */
    private static final long T0 = 1_700_000_000_000L;

    private final AtomicLong now = new AtomicLong(T0);

    private WaitingRoom room(int admitPerSecond, int maxInside, long stayMs) {
        return new WaitingRoom(new WaitingRoomProperties(admitPerSecond, maxInside, stayMs, 500), now::get);
    }

    private static WaitingRoom.Ticket check(WaitingRoom room, WaitingRoom.Ticket ticket) {
        return room.check(ticket.token()).orElseThrow();
    }

    @Test
    void admitsInArrivalOrderAtTheConfiguredRate() {
        WaitingRoom room = room(2, 0, 1000);
        List<WaitingRoom.Ticket> tickets = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            tickets.add(room.register());
        }
        assertThat(tickets).extracting(WaitingRoom.Ticket::canEnter).containsExactly(true, true, false, false, false);
        assertThat(tickets).extracting(WaitingRoom.Ticket::position).containsExactly(0L, 0L, 1L, 2L, 3L);
        assertThat(tickets.get(2).pollingPeriod()).isEqualTo(500);

        now.addAndGet(999); // same calendar second: budget spent
        assertThat(check(room, tickets.get(2)).canEnter()).isFalse();

        now.addAndGet(1); // next second: polling the last visitor still admits the two ahead of it first
        WaitingRoom.Ticket last = check(room, tickets.get(4));
        assertThat(last.canEnter()).isFalse();
        assertThat(last.position()).isEqualTo(1);
        assertThat(check(room, tickets.get(2)).canEnter()).isTrue();
        assertThat(check(room, tickets.get(3)).canEnter()).isTrue();

        now.addAndGet(1000);
        assertThat(check(room, tickets.get(4))).isEqualTo(new WaitingRoom.Ticket(last.token(), true, 0, 500));
        assertThat(check(room, tickets.get(0)).canEnter()).as("admission is sticky").isTrue();

        WaitingRoom.Stats stats = room.stats();
        assertThat(stats.registered()).isEqualTo(5);
        assertThat(stats.admitted()).isEqualTo(5);
        assertThat(stats.waiting()).isZero();
        assertThat(stats.maxAdmittedInOneSecond()).isEqualTo(2);
        assertThat(stats.admissionsPerSecond()).containsExactly(
                Map.entry(T0 / 1000, 2), Map.entry(T0 / 1000 + 1, 2), Map.entry(T0 / 1000 + 2, 1));
    }

    @Test
    void capsVisitorsInsideUntilTheirStayEnds() {
        WaitingRoom room = room(10, 2, 1500);
        List<WaitingRoom.Ticket> tickets = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            tickets.add(room.register());
        }
        assertThat(tickets).extracting(WaitingRoom.Ticket::canEnter).containsExactly(true, true, false, false, false);

        now.addAndGet(1499); // new second and budget, but the first two are still inside
        assertThat(check(room, tickets.get(2)).canEnter()).isFalse();
        now.addAndGet(1);
        assertThat(check(room, tickets.get(2)).canEnter()).isTrue();
        assertThat(check(room, tickets.get(3)).canEnter()).isTrue();
        assertThat(check(room, tickets.get(4)).position()).isEqualTo(1);

        assertThat(room.stats().inside()).isEqualTo(2);
        assertThat(room.stats().maxInsideObserved()).isEqualTo(2);
    }

    @Test
    void unknownTokensAndResetForgetVisitors() {
        WaitingRoom room = room(1, 0, 1000);
        WaitingRoom.Ticket ticket = room.register();
        assertThat(room.check("no-such-token")).isEmpty();

        room.reset();

        assertThat(room.check(ticket.token())).isEmpty();
        WaitingRoom.Stats stats = room.stats();
        assertThat(stats.registered()).isZero();
        assertThat(stats.admissionsPerSecond()).isEmpty();
        assertThat(room.register().canEnter()).as("budget of the second is cleared too").isTrue();
    }

    @Test
    void rejectsRulesThatWouldNeverAdmitAnyone() {
        assertThatThrownBy(() -> new WaitingRoomProperties(0, 0, 1000, 1000))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("WAITING_ROOM_ADMIT_PER_SECOND");
    }

    /**
     * Many threads register and poll while a ticker moves the clock through several seconds. Checks the
     * room's own accounting and, independently, what clients saw: a visitor is seen admitted no earlier
     * than it was admitted, so by the end of second s at most N * (s + 1) visitors can have been seen in.
     */
    @Test
    void neverExceedsTheRateUnderConcurrency() throws Exception {
        int perSecond = 25;
        int threads = 8;
        long endAt = T0 + 5_000;
        WaitingRoom room = room(perSecond, 0, 1000);
        ConcurrentLinkedQueue<Long> firstSeenIn = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<WaitingRoom.Ticket> all = new ConcurrentLinkedQueue<>();

        ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
        try {
            Future<?> ticker = pool.submit(() -> {
                while (now.get() < endAt) {
                    now.incrementAndGet();
                    LockSupport.parkNanos(20_000);
                }
            });
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                workers.add(pool.submit(() -> {
                    Map<String, Long> lastPosition = new HashMap<>();
                    List<WaitingRoom.Ticket> mine = new ArrayList<>();
                    while (now.get() < endAt) {
                        if (mine.size() < 200) {
                            WaitingRoom.Ticket fresh = room.register();
                            mine.add(fresh);
                            all.add(fresh);
                            lastPosition.put(fresh.token(), fresh.position());
                            if (fresh.canEnter()) {
                                firstSeenIn.add(Math.floorDiv(now.get(), 1000L));
                            }
                        }
                        for (WaitingRoom.Ticket ticket : mine) {
                            long before = lastPosition.get(ticket.token());
                            if (before == 0) {
                                continue; // already in
                            }
                            WaitingRoom.Ticket polled = check(room, ticket);
                            assertThat(polled.position()).as("a place in line never gets worse").isLessThanOrEqualTo(before);
                            lastPosition.put(ticket.token(), polled.position());
                            if (polled.canEnter()) {
                                firstSeenIn.add(Math.floorDiv(now.get(), 1000L));
                            }
                        }
                    }
                }));
            }
            for (Future<?> worker : workers) {
                worker.get(20, TimeUnit.SECONDS);
            }
            ticker.get(20, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }

        WaitingRoom.Stats stats = room.stats();
        assertThat(stats.maxAdmittedInOneSecond()).as("the limit was actually reached").isEqualTo(perSecond);
        assertThat(stats.admissionsPerSecond().values()).allSatisfy(n -> assertThat(n).isBetween(1, perSecond));
        assertThat(stats.admissionsPerSecond().values().stream().mapToLong(Integer::longValue).sum())
                .isEqualTo(stats.admitted());
        assertThat(stats.waiting()).as("demand exceeded the rate").isPositive();

        long firstSecond = T0 / 1000;
        for (long s = firstSecond; s <= endAt / 1000; s++) {
            long second = s;
            long seen = firstSeenIn.stream().filter(x -> x <= second).count();
            assertThat(seen).isLessThanOrEqualTo(perSecond * (second - firstSecond + 1));
        }

        // Waiting visitors hold exactly the places 1..waiting: one consistent line, nobody skipped or doubled.
        long[] positions = all.stream().map(t -> check(room, t)).filter(t -> !t.canEnter())
                .mapToLong(WaitingRoom.Ticket::position).sorted().toArray();
        assertThat(positions).containsExactly(LongStream.rangeClosed(1, positions.length).toArray());
        assertThat(all).hasSize((int) stats.registered());
    }
}
