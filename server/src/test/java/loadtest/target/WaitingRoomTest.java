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

    private WaitingRoom patientRoom(int admitPerSecond) {
        return new WaitingRoom(new WaitingRoomProperties(admitPerSecond, 0, 1000, 500), now::get, Long.MAX_VALUE / 4);
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
    void budgetHoldsInEverySlidingSecondNotJustPerCalendarSecond() {
        WaitingRoom room = room(3, 0, 0);
        now.set(T0 + 900);
        for (int i = 0; i < 3; i++) {
            assertThat(room.register().canEnter()).isTrue();
        }
        now.set(T0 + 1000); // a new calendar second, but the window still holds the three of T0 + 900
        List<WaitingRoom.Ticket> late = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            late.add(room.register());
        }
        assertThat(late).extracting(WaitingRoom.Ticket::canEnter).containsOnly(false);
        now.set(T0 + 1899);
        assertThat(check(room, late.get(0)).canEnter()).isFalse();
        now.set(T0 + 1900);
        assertThat(late).extracting(t -> check(room, t).canEnter()).containsOnly(true);
        assertThat(room.stats().maxAdmittedInOneSecond()).isEqualTo(3);
    }

    @Test
    void forgetsSilentVisitorsAndNeverAdmitsOneThatGaveUp() {
        WaitingRoom room = room(1, 1, 10_000); // the first visitor stays inside 10 s: the others must wait
        assertThat(room.giveUpAfterMs()).isEqualTo(WaitingRoom.MIN_GIVE_UP_AFTER_MS);
        WaitingRoom.Ticket first = room.register();
        WaitingRoom.Ticket quitter = room.register();
        WaitingRoom.Ticket stayer = room.register();
        assertThat(first.canEnter()).isTrue();
        assertThat(stayer.position()).isEqualTo(2);

        now.set(T0 + 900);
        assertThat(check(room, quitter).position()).isEqualTo(1); // its last poll
        // The stayer polls every second until the first visitor leaves; the quitter is silent.
        for (long t = 1_000; t < 10_000; t += 1_000) {
            now.set(T0 + t);
            assertThat(check(room, stayer).canEnter()).isFalse();
        }
        assertThat(room.check(quitter.token())).as("silent since T0 + 900: forgotten").isEmpty();
        assertThat(room.stats().waiting()).as("the quitter no longer waits, though it is still in the line").isEqualTo(1);
        assertThat(check(room, stayer).position()).as("a paper ticket's number: those ahead by number").isEqualTo(2);
        now.set(T0 + 10_000);
        WaitingRoom.Ticket stayerNow = check(room, stayer);
        assertThat(stayerNow.canEnter()).as("the quitter's place goes to the next in line").isTrue();

        WaitingRoom.Stats stats = room.stats();
        assertThat(stats.admitted()).as("the quitter was never admitted").isEqualTo(2);
        assertThat(stats.gaveUp()).isEqualTo(1);
        assertThat(stats.waiting()).isZero();

        // Admitted visitors are forgotten too once silent: nothing stays known for the whole run.
        now.addAndGet(room.giveUpAfterMs());
        assertThat(room.check(stayer.token())).isEmpty();
        assertThat(room.check(first.token())).isEmpty();
        assertThat(room.stats().known()).isZero();
    }

    @Test
    void knowsAtMostMaxVisitorsAtOnce() {
        WaitingRoom room = room(1, 0, 1000);
        for (int i = 0; i < WaitingRoom.MAX_VISITORS; i++) {
            room.register();
        }
        assertThatThrownBy(room::register)
                .isInstanceOfSatisfying(ApiException.class,
                        ex -> assertThat(ex.status()).isEqualTo(org.springframework.http.HttpStatus.SERVICE_UNAVAILABLE))
                .hasMessageContaining("waiting room full");
        assertThat(room.stats().known()).isEqualTo(WaitingRoom.MAX_VISITORS);

        now.addAndGet(room.giveUpAfterMs()); // all silent since: forgotten, and the line drains
        assertThat(room.register().canEnter()).as("those ahead gave up: they leave the line without spending the budget").isTrue();
        assertThat(room.stats().known()).isEqualTo(1);
        assertThat(room.stats().gaveUp()).isEqualTo(WaitingRoom.MAX_VISITORS - 1L);
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
        WaitingRoom room = patientRoom(perSecond); // nobody gives up: every ticket is checked at the end
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
