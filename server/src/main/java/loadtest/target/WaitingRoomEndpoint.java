package loadtest.target;

import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.stereotype.Component;

/**
 * The waiting room's operator side, on the management connector only ({@code /actuator/waitingroom}):
 * GET reads the stats, POST empties the room. Reset is not on the port under load, where any client
 * could empty the line mid-cell; the management connector listens on 127.0.0.1 of the target's host.
 */
@Component
@Endpoint(id = "waitingroom")
class WaitingRoomEndpoint {

    private final WaitingRoom room;

    WaitingRoomEndpoint(WaitingRoom room) {
        this.room = room;
    }

    @ReadOperation
    WaitingRoom.Stats stats() {
        return room.stats();
    }

    @WriteOperation
    WaitingRoom.Stats reset() {
        room.reset();
        return room.stats();
    }
}
