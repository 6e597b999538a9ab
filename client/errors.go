package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"benchd.dev/client/apitype"
)

// Error classes. An *Error matches exactly one of them with errors.Is.
var (
	ErrInvalid   = errors.New("invalid request")          // 400: bad input, nothing changed
	ErrForbidden = errors.New("forbidden")                // 403: not root and not in group benchd
	ErrNotFound  = errors.New("not found")                // 404
	ErrConflict  = errors.New("conflict")                 // 409: e.g. cancel of a finished attempt
	ErrTooLarge  = errors.New("request too large")        // 413
	ErrBusy      = errors.New("benchd is busy")           // 503: shutting down
	ErrInternal  = errors.New("benchd failed internally") // 500 and anything else
	// ErrNotRunning is matched when nothing listens on the socket.
	ErrNotRunning = errors.New("benchd is not running")
)

// Error is an error response of benchd.
type Error struct {
	Status  int    // HTTP status; 0 when the error arose in the client
	Code    string // apitype.Code*
	Message string // benchd's sentence
}

// Error returns benchd's message, which names what was wrong.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Unwrap().Error()
	}
	return e.Message
}

// Unwrap returns the error's class: by its code, or by its status where
// the code is missing or unknown to this client.
func (e *Error) Unwrap() error {
	switch e.Code {
	case apitype.CodeInvalid:
		return ErrInvalid
	case apitype.CodeForbidden:
		return ErrForbidden
	case apitype.CodeNotFound:
		return ErrNotFound
	case apitype.CodeConflict:
		return ErrConflict
	case apitype.CodeTooLarge:
		return ErrTooLarge
	case apitype.CodeBusy:
		return ErrBusy
	case apitype.CodeInternal:
		return ErrInternal
	}
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return ErrInvalid
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return ErrBusy
	}
	return ErrInternal
}

// errorFromResponse reads an error response: an apitype.Error body where
// benchd wrote one, else the status and the start of whatever came.
func errorFromResponse(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode}
	var wire apitype.Error
	if json.Unmarshal(b, &wire) == nil && (wire.Code != "" || wire.Message != "") {
		e.Code, e.Message = wire.Code, wire.Message
	} else {
		msg := strings.TrimSpace(string(b))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e.Message = "benchd answered " + resp.Status + ": " + msg
	}
	return e
}
