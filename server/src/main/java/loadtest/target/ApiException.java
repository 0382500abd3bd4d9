package loadtest.target;

import org.springframework.http.HttpStatus;

/** A client error that is answered as {@code {"error": message}} with the given status. */
public class ApiException extends RuntimeException {

    private final HttpStatus status;

    public ApiException(HttpStatus status, String message) {
        super(message, null, false, false);
        this.status = status;
    }

    public HttpStatus status() {
        return status;
    }
}
