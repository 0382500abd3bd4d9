package loadtest.target;

import java.io.IOException;
import java.io.InputStream;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;

import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

@RestController
@RequestMapping("/api")
class WaitingRoomController {

    private static final int MAX_BODY_BYTES = 4096;

    private final WaitingRoom room;
    private final ObjectMapper json;

    WaitingRoomController(WaitingRoom room, ObjectMapper json) {
        this.room = room;
        this.json = json;
    }

    @PostMapping("/wait")
    WaitingRoom.Ticket register() {
        return room.register();
    }

    /**
     * Reads the raw body instead of using {@code @RequestBody}, so that a load generator that omits or
     * mislabels Content-Type (k6 sends none for a string body) is still understood.
     */
    @PostMapping("/entry")
    WaitingRoom.Ticket entry(InputStream body) throws IOException {
        String token = tokenOf(body.readNBytes(MAX_BODY_BYTES + 1));
        return room.check(token).orElseThrow(() -> new ApiException(HttpStatus.NOT_FOUND, "unknown token"));
    }

    @GetMapping("/waiting-room/stats")
    WaitingRoom.Stats stats() {
        return room.stats();
    }

    private String tokenOf(byte[] body) {
        if (body.length > MAX_BODY_BYTES) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "body larger than " + MAX_BODY_BYTES + " bytes");
        }
        JsonNode token;
        try {
            JsonNode root = json.readTree(body);
            token = root == null ? MissingNode.getInstance() : root.path("token");
        } catch (JsonProcessingException ex) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "malformed JSON body");
        } catch (IOException ex) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "unreadable body");
        }
        if (token.isMissingNode() || token.isNull()) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "missing token");
        }
        if (!token.isTextual() || token.asText().isBlank()) {
            throw new ApiException(HttpStatus.BAD_REQUEST, "token must be a non-empty string");
        }
        return token.asText();
    }
}
