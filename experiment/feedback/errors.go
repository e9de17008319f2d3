package feedback

import (
	"errors"
	"fmt"
)

// Reason is why a feedback was not joined.
type Reason int

// The reasons, each the value of react_experiment_feedback_rejected_total's
// reason label.
const (
	// Unknown: no request with this id is held or remembered: it was never
	// served with an experiment's arm here (another replica, another
	// model, a typo), or it left the window so long ago that it is
	// forgotten.
	Unknown Reason = iota + 1
	// Expired: the request left the window unanswered, too old or pushed
	// out by newer requests.
	Expired
	// Duplicate: the request took its feedback already.
	Duplicate
	// Invalid: the feedback is malformed, or does not fit the request (a
	// label for an output without a prediction, a class out of range).
	Invalid
)

var reasonNames = [...]string{Unknown: "unknown", Expired: "expired", Duplicate: "duplicate", Invalid: "invalid"}

// String returns the reason's label value.
func (r Reason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// The errors a Join returns wrap one of these; errors.Is tells them apart.
var (
	ErrUnknownID = errors.New("unknown id")
	ErrExpired   = errors.New("expired")
	ErrDuplicate = errors.New("duplicate feedback")
	ErrInvalid   = errors.New("invalid feedback")
)

var sentinels = [...]error{Unknown: ErrUnknownID, Expired: ErrExpired, Duplicate: ErrDuplicate, Invalid: ErrInvalid}

// Error is why a feedback was not joined.
type Error struct {
	Reason Reason
	// Model and ID name the request the feedback is about ("" when the
	// feedback did not parse far enough to tell).
	Model, ID string
	// Err holds what is invalid, a problem.List; nil for another reason.
	Err error
}

func (e *Error) Error() string {
	var what string
	switch e.Reason {
	case Unknown:
		what = fmt.Sprintf("no request with id %q is held (it was not served with an experiment's arm by this sidecar, or was forgotten long ago)", e.ID)
	case Expired:
		what = fmt.Sprintf("request %q left the window unanswered: its feedback came too late", e.ID)
	case Duplicate:
		what = fmt.Sprintf("request %q took its feedback already", e.ID)
	case Invalid:
		what = fmt.Sprintf("invalid feedback: %v", e.Err)
	default:
		what = e.Reason.String()
	}
	if e.Model == "" {
		return "feedback: " + what
	}
	return fmt.Sprintf("feedback: model %q: %s", e.Model, what)
}

// Unwrap returns the problems of an invalid feedback.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's reason.
func (e *Error) Is(target error) bool {
	return e.Reason > 0 && int(e.Reason) < len(sentinels) && target == sentinels[e.Reason]
}

// ReasonOf returns the reason of a Join's error, 0 for any other error.
func ReasonOf(err error) Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return 0
}
