package feedback

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"
	"unique"

	"github.com/mergectl/react-triton/problem"
)

// Defaults and bounds of Options.
const (
	// DefaultMaxEntries is the default bound on the requests a window
	// holds: at about 200 bytes each (entry and remembered id), some 20 MB.
	DefaultMaxEntries = 100_000
	// DefaultMaxAge is how long a request stays joinable by default.
	DefaultMaxAge = time.Hour
	// MaxMaxEntries bounds MaxEntries and Remembered.
	MaxMaxEntries = 1 << 24
	// EntryBytes bounds the memory a window takes per request it holds,
	// with the id it remembers after the request leaves and the window's
	// fixed costs spread over its MaxEntries (about 320 measured;
	// TestMemoryBound holds it): what a memory budget counts for a window
	// whose Remembered is MaxEntries.
	EntryBytes = 400
)

// sweepPerOp is how many of the oldest slots Record and Join look at to
// expire requests older than MaxAge: more than the one slot a Record
// fills, so that the sweep keeps up, and a constant, so that no call
// does more than O(1) work. A request found too old by Join is expired
// there.
const sweepPerOp = 4

// Options bound a Window. The zero value takes the defaults.
type Options struct {
	// MaxEntries bounds the requests held: a request stays joinable until
	// MaxEntries more are recorded after it (default DefaultMaxEntries).
	MaxEntries int
	// MaxAge is how long a request stays joinable (default DefaultMaxAge).
	MaxAge time.Duration
	// Remembered is how many of the ids that left the window, answered or
	// not, are remembered to tell a duplicate or a late feedback from an
	// unknown id (default MaxEntries).
	Remembered int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Remembered == 0 {
		o.Remembered = o.MaxEntries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate reports options out of range, all at once (zero values take
// the defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	var p problem.List
	if o.MaxEntries < 0 || o.MaxEntries > MaxMaxEntries {
		p.Add("max_entries", "want a number from 1 to %d (0 for %d), got %d", MaxMaxEntries, DefaultMaxEntries, o.MaxEntries)
	}
	if o.MaxAge < 0 {
		p.Add("max_age", "want a positive duration (0 for %v), got %v", DefaultMaxAge, o.MaxAge)
	}
	if o.Remembered < 0 || o.Remembered > MaxMaxEntries {
		p.Add("remembered", "want a number from 1 to %d (0 for max_entries), got %d", MaxMaxEntries, o.Remembered)
	}
	return p.Err()
}

// key is a request's model and id, hashed: 128 bits, so that two ids
// held at once collide with a chance of about n²/2¹²⁹.
type key [2]uint64

// Window joins feedback to the requests served in experiments. It is
// safe for concurrent use, and a prometheus.Collector of its metrics
// (metrics.go). One window serves the whole process and outlives
// reloads: a request keeps the arm that served it.
type Window struct {
	opt   Options
	seeds [2]maphash.Seed
	epoch time.Time

	mu sync.Mutex
	// slots is a ring of the last MaxEntries requests recorded, in order:
	// position p (counted from 0 over the window's life) is slots[p %
	// MaxEntries]; a slot whose request was answered or dropped is empty
	// (arm nil). It grows to MaxEntries, then is reused.
	slots []slot
	// next is the position of the next request, oldest the position of
	// the oldest slot that may still hold one: oldest ≤ next ≤ oldest +
	// MaxEntries.
	next, oldest uint64
	index        map[key]int // the slot of each request held
	held         int         // requests held
	gone         *memory
	counts
}

// slot is one request held.
type slot struct {
	k     key
	at    time.Duration // when recorded, since the window's epoch
	arm   *armCounts    // nil for an empty slot
	pref  unique.Handle[string]
	preds []pred
}

// pred is a Prediction with its names interned.
type pred struct {
	output, task   unique.Handle[string]
	class, classes int
}

// NewWindow returns an empty window.
func NewWindow(opt Options) (*Window, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("feedback window: %w", err)
	}
	opt = opt.withDefaults()
	w := &Window{
		opt:    opt,
		seeds:  [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		epoch:  opt.Now(),
		index:  make(map[key]int),
		gone:   newMemory(opt.Remembered),
		counts: newCounts(),
	}
	return w, nil
}

// Options returns the window's options, defaults applied.
func (w *Window) Options() Options { return w.opt }

// key hashes a model's name and a request id.
func (w *Window) key(model, id string) key {
	var k key
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(model)))
	for i := range k {
		var h maphash.Hash
		h.SetSeed(w.seeds[i])
		h.Write(n[:])
		h.WriteString(model)
		h.WriteString(id)
		k[i] = h.Sum64()
	}
	return k
}

// since returns the window's clock.
func (w *Window) since() time.Duration { return w.opt.Now().Sub(w.epoch) }

// Record holds a request served with an experiment's arm, under its
// model's name and id, until its feedback comes, MaxAge passes or
// MaxEntries newer requests are recorded. A request recorded again under
// the same id replaces the one held (the older is dropped, counted with
// reason "replaced"): the id of a client that reuses ids refers to its
// latest request. An error says that nothing was recorded: an empty id
// or name.
func (w *Window) Record(id string, s Served) error {
	if id == "" || s.Model == "" || s.Experiment == "" || s.Arm == "" {
		return fmt.Errorf("feedback: recording a request needs an id, a model, an experiment and an arm, got %q, %q, %q, %q", id, s.Model, s.Experiment, s.Arm)
	}
	var preds []pred
	if len(s.Predictions) > 0 {
		preds = make([]pred, len(s.Predictions))
		for i, p := range s.Predictions {
			preds[i] = pred{unique.Make(p.Output), unique.Make(p.Task), p.Class, p.Classes}
		}
	}
	pref := unique.Make(s.Preference)
	k := w.key(s.Model, id)
	now := w.since()

	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweep(now, sweepPerOp)
	if i, ok := w.index[k]; ok {
		w.drop(i, dropReplaced)
	}
	w.gone.forget(k)
	n := uint64(w.opt.MaxEntries)
	if w.next-w.oldest == n {
		i := int(w.oldest % n)
		if s := &w.slots[i]; s.arm != nil {
			reason := dropEvicted
			if now-s.at > w.opt.MaxAge {
				reason = dropExpired
			}
			w.drop(i, reason)
		}
		w.oldest++
	}
	a := w.arm(s.Model, s.Experiment, s.Arm)
	i := int(w.next % n)
	if i == len(w.slots) {
		w.slots = append(w.slots, slot{})
	}
	w.slots[i] = slot{k: k, at: now, arm: a, pref: pref, preds: preds}
	w.index[k] = i
	w.next++
	w.held++
	a.recorded++
	return nil
}

// sweep drops the requests older than MaxAge among the oldest slots,
// looking at limit slots at most (all with limit < 0).
func (w *Window) sweep(now time.Duration, limit int) {
	n := uint64(w.opt.MaxEntries)
	for ; limit != 0 && w.oldest < w.next; limit-- {
		i := int(w.oldest % n)
		if s := &w.slots[i]; s.arm != nil {
			if now-s.at <= w.opt.MaxAge {
				return
			}
			w.drop(i, dropExpired)
		}
		w.oldest++
	}
}

// drop empties slot i, whose request leaves unanswered.
func (w *Window) drop(i int, reason dropReason) {
	s := &w.slots[i]
	s.arm.dropped[reason]++
	w.gone.add(s.k, goneExpired)
	w.release(i)
}

// release empties slot i.
func (w *Window) release(i int) {
	delete(w.index, w.slots[i].k)
	w.slots[i] = slot{}
	w.held--
}

// Len returns the number of requests held, after dropping those older
// than MaxAge.
func (w *Window) Len() int {
	now := w.since()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweep(now, -1)
	return w.held
}

// Join joins f to the request of model it is about, once, and counts the
// outcome for the request's arm. The error is an *Error: ErrInvalid for
// a feedback that is malformed or does not fit the request (the request
// stays joinable), ErrUnknownID, ErrExpired or ErrDuplicate for a request
// not held; errors.Is tells them apart, and HTTPStatus and GRPCCode give
// their statuses.
func (w *Window) Join(model string, f Feedback) (Joined, error) {
	if err := f.Validate(); err != nil {
		return Joined{}, w.reject(model, f.ID, Invalid, err)
	}
	k := w.key(model, f.ID)
	now := w.since()

	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweep(now, sweepPerOp)
	i, ok := w.index[k]
	if !ok {
		switch w.gone.lookup(k) {
		case goneAnswered:
			return Joined{}, w.rejectLocked(model, f.ID, Duplicate, nil)
		case goneExpired:
			return Joined{}, w.rejectLocked(model, f.ID, Expired, nil)
		}
		return Joined{}, w.rejectLocked(model, f.ID, Unknown, nil)
	}
	s := &w.slots[i]
	if now-s.at > w.opt.MaxAge {
		w.drop(i, dropExpired)
		return Joined{}, w.rejectLocked(model, f.ID, Expired, nil)
	}
	j := Joined{
		Model: model, ID: f.ID,
		Experiment: s.arm.experiment, Arm: s.arm.name, Preference: s.pref.Value(),
		Served: w.epoch.Add(s.at),
		Kind:   f.Kind, Predicted: NoClass,
	}
	switch f.Kind {
	case Label:
		p, err := judge(s.preds, f)
		if err != nil {
			return Joined{}, w.rejectLocked(model, f.ID, Invalid, err)
		}
		j.Output, j.Task = p.output.Value(), p.task.Value()
		if j.Task == "" {
			j.Task = j.Output
		}
		j.Class, j.Predicted = int(f.Class), p.class
		j.Score = score(int64(p.class) == f.Class)
	case Reward:
		j.Score = f.Value
	}
	w.count(s.arm, j)
	w.gone.add(k, goneAnswered)
	w.release(i)
	return j, nil
}

// judge returns the prediction a label is compared with, or the problems
// of a label that does not fit the request.
func judge(preds []pred, f Feedback) (pred, error) {
	var p problem.List
	var found *pred
	switch {
	case len(preds) == 0:
		p.Add("label", "the request recorded no prediction to compare a label with (its outputs are not logits of one row): send a reward")
		return pred{}, p
	case f.Output == "" && len(preds) > 1:
		p.Add("output", "missing: the request has several outputs with a prediction (%s)", outputNames(preds))
		return pred{}, p
	case f.Output == "":
		found = &preds[0]
	default:
		for i := range preds {
			if preds[i].output.Value() == f.Output {
				found = &preds[i]
				break
			}
		}
		if found == nil {
			p.Add("output", "%q has no prediction in the request (outputs with one: %s)", f.Output, outputNames(preds))
			return pred{}, p
		}
	}
	switch name := found.output.Value(); {
	case found.class < 0:
		p.Add("label", "output %q predicted no single class (several rows, or not logits): send a reward", name)
	case found.classes > 0 && f.Class >= int64(found.classes):
		p.Add("label", "class %d is out of range: output %q has %d classes", f.Class, name, found.classes)
	}
	return *found, p.Err()
}

// outputNames lists the outputs of preds.
func outputNames(preds []pred) string {
	names := make([]string, len(preds))
	for i, p := range preds {
		names[i] = p.output.Value()
	}
	return strings.Join(names, ", ")
}

// reject counts a feedback that was not joined and returns its error.
func (w *Window) reject(model, id string, r Reason, err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rejectLocked(model, id, r, err)
}

func (w *Window) rejectLocked(model, id string, r Reason, err error) error {
	w.rejected[rejectKey{w.modelLabel(model), r}]++
	return &Error{Reason: r, Model: model, ID: id, Err: err}
}
