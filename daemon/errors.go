package daemon

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/tasks"
)

// Error classes. Handlers wrap one of them (or a class of store, runs or
// tasks) with context; httpError is the one place they become a status
// and an apitype code.
var (
	errInvalid   = errors.New("invalid request")
	errNotFound  = errors.New("not found")
	errConflict  = errors.New("conflict")
	errBusy      = errors.New("benchd is shutting down")
	errQueueFull = errors.New("the queue is full: try again when attempts have started")
	errTooLarge  = errors.New("request body too large")
	errForbidden = errors.New("forbidden")
)

// classes maps each class, in the order they are tested, to its status
// and wire code. Invalid comes before not found: an agent naming a known
// attempt that does not exist is bad input, not a missing resource.
var classes = []struct {
	errs   []error
	status int
	code   string
}{
	{[]error{errTooLarge}, http.StatusRequestEntityTooLarge, apitype.CodeTooLarge},
	{[]error{errForbidden}, http.StatusForbidden, apitype.CodeForbidden},
	{[]error{errBusy, errQueueFull}, http.StatusServiceUnavailable, apitype.CodeBusy},
	{[]error{errInvalid, tasks.ErrInvalid, runs.ErrInvalid}, http.StatusBadRequest, apitype.CodeInvalid},
	{[]error{errNotFound, store.ErrNotFound, tasks.ErrNotFound}, http.StatusNotFound, apitype.CodeNotFound},
	{[]error{errConflict, store.ErrConflict}, http.StatusConflict, apitype.CodeConflict},
}

// httpError returns the status and wire error for err.
func httpError(err error) (int, apitype.Error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, apitype.Error{Code: apitype.CodeTooLarge, Message: err.Error()}
	}
	for _, c := range classes {
		for _, e := range c.errs {
			if errors.Is(err, e) {
				return c.status, apitype.Error{Code: c.code, Message: err.Error()}
			}
		}
	}
	return http.StatusInternalServerError, apitype.Error{Code: apitype.CodeInternal, Message: err.Error()}
}

// writeError sends err as an apitype.Error; internal errors are logged.
func writeError(w http.ResponseWriter, log *slog.Logger, r *http.Request, err error) {
	status, body := httpError(err)
	if status == http.StatusInternalServerError {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, body)
}

// writeJSON sends v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
