package feedback

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// clock is a settable clock for a window.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestWindow(t *testing.T, opt Options) (*Window, *clock) {
	t.Helper()
	c := &clock{time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	opt.Now = c.Now
	w, err := NewWindow(opt)
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

// served is a request of model m in experiment ab, arm arm, with one
// output "logits" of task fashion that predicted class 3 of 10.
func served(arm string) Served {
	return Served{Model: "m", Experiment: "ab", Arm: arm, Preference: "fashion=1",
		Predictions: []Prediction{{Output: "logits", Task: "fashion", Class: 3, Classes: 10}}}
}

func label(id string, class int64) Feedback { return Feedback{ID: id, Kind: Label, Class: class} }
func reward(id string, v float64) Feedback  { return Feedback{ID: id, Kind: Reward, Value: v} }

// step is one operation of a scripted window: a Record, a Join, or time
// passing, with what it must give.
type step struct {
	record  string // an id to record, with served(arm)
	arm     string
	serve   *Served // instead of served(arm)
	join    *Feedback
	model   string // the model of a join; "" for m
	wait    time.Duration
	reason  Reason  // the join's error reason; 0 for joined
	score   float64 // a joined outcome's score
	held    int     // Len after the step, -1 to skip
	problem string  // an invalid join's message contains it
}

func runSteps(t *testing.T, w *Window, c *clock, steps []step) {
	t.Helper()
	for i, s := range steps {
		switch {
		case s.record != "":
			sv := served(s.arm)
			if s.serve != nil {
				sv = *s.serve
			}
			if err := w.Record(s.record, sv); err != nil {
				t.Fatalf("step %d: record %q: %v", i, s.record, err)
			}
		case s.join != nil:
			model := s.model
			if model == "" {
				model = "m"
			}
			j, err := w.Join(model, *s.join)
			if got := ReasonOf(err); got != s.reason {
				t.Fatalf("step %d: join %+v: %v (reason %v), want reason %v", i, *s.join, err, got, s.reason)
			}
			if err == nil && j.Score != s.score {
				t.Errorf("step %d: join %+v: score %v, want %v", i, *s.join, j.Score, s.score)
			}
			if s.problem != "" && (err == nil || !strings.Contains(err.Error(), s.problem)) {
				t.Errorf("step %d: join %+v: %v, want %q in it", i, *s.join, err, s.problem)
			}
		default:
			c.advance(s.wait)
		}
		if s.held >= 0 {
			if n := w.Len(); n != s.held {
				t.Fatalf("step %d: %d requests held, want %d", i, n, s.held)
			}
		}
	}
}

func fb(f Feedback) *Feedback { return &f }

func TestWindow(t *testing.T) {
	twoOutputs := Served{Model: "m", Experiment: "ab", Arm: "A", Predictions: []Prediction{
		{Output: "a_logits", Task: "a", Class: 1, Classes: 5}, {Output: "b_logits", Task: "b", Class: 2}}}
	noPrediction := Served{Model: "m", Experiment: "ab", Arm: "A"}
	batched := Served{Model: "m", Experiment: "ab", Arm: "A", Predictions: []Prediction{{Output: "logits", Class: NoClass}}}
	for _, tc := range []struct {
		name  string
		opt   Options
		steps []step
	}{
		{"label matched, then duplicate", Options{}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(label("1", 3)), score: 1, held: 0},
			{join: fb(label("1", 3)), reason: Duplicate, held: 0},
			{join: fb(reward("1", 1)), reason: Duplicate, held: 0},
		}},
		{"label missed", Options{}, []step{
			{record: "1", arm: "B", held: 1},
			{join: fb(label("1", 4)), score: 0, held: 0},
		}},
		{"reward", Options{}, []step{
			{record: "1", arm: "B", held: 1},
			{join: fb(reward("1", 0.25)), score: 0.25, held: 0},
		}},
		{"unknown id, other model", Options{}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(label("2", 3)), reason: Unknown, held: 1},
			{join: fb(label("1", 3)), model: "other", reason: Unknown, held: 1},
			{join: fb(label("1", 3)), score: 1, held: 0},
		}},
		{"expired by age", Options{MaxAge: time.Minute}, []step{
			{record: "1", arm: "A", held: 1},
			{wait: time.Minute, held: 1},
			{join: fb(label("1", 3)), score: 1, held: 0},
			{record: "2", arm: "A", held: 1},
			{wait: time.Minute + time.Nanosecond, held: 0},
			{join: fb(label("2", 3)), reason: Expired, held: 0},
			{join: fb(label("2", 3)), reason: Expired, held: 0},
		}},
		{"expired at join, before any sweep", Options{MaxAge: time.Minute}, []step{
			{record: "1", arm: "A", held: -1},
			{wait: 2 * time.Minute, held: -1},
			{join: fb(reward("1", 1)), reason: Expired, held: 0},
		}},
		{"evicted by newer requests", Options{MaxEntries: 2}, []step{
			{record: "1", arm: "A", held: 1},
			{record: "2", arm: "A", held: 2},
			{record: "3", arm: "A", held: 2},
			{join: fb(label("1", 3)), reason: Expired, held: 2},
			{join: fb(label("2", 3)), score: 1, held: 1},
			{record: "4", arm: "A", held: 2},
			{join: fb(label("3", 3)), score: 1, held: 1},
			{join: fb(label("4", 0)), score: 0, held: 0},
		}},
		{"an answered slot makes no room: the window is the last MaxEntries recorded", Options{MaxEntries: 2}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(label("1", 3)), score: 1, held: 0},
			{record: "2", arm: "A", held: 1},
			{record: "3", arm: "A", held: 2},
			{record: "4", arm: "A", held: 2},
			{join: fb(label("2", 3)), reason: Expired, held: 2},
		}},
		{"remembered ids are bounded", Options{MaxEntries: 4, Remembered: 2}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(label("1", 3)), score: 1, held: 0},
			{record: "2", arm: "A", held: 1},
			{join: fb(label("2", 3)), score: 1, held: 0},
			{join: fb(label("1", 3)), reason: Duplicate, held: 0},
			{record: "3", arm: "A", held: 1},
			{join: fb(label("3", 3)), score: 1, held: 0},
			{join: fb(label("1", 3)), reason: Unknown, held: 0},
			{join: fb(label("2", 3)), reason: Duplicate, held: 0},
		}},
		// An id answered twice is remembered twice: its older answer
		// leaving the memory forgets nothing, its latest does.
		{"answered twice, remembered by its latest answer", Options{MaxEntries: 4, Remembered: 3}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(reward("1", 1)), score: 1, held: 0},
			{record: "1", arm: "A", held: 1},
			{join: fb(reward("1", 1)), score: 1, held: 0},
			{record: "2", arm: "A", held: 1},
			{join: fb(reward("2", 1)), score: 1, held: 0},
			{record: "3", arm: "A", held: 1},
			{join: fb(reward("3", 1)), score: 1, held: 0},
			{join: fb(reward("1", 1)), reason: Duplicate, held: 0},
			{record: "4", arm: "A", held: 1},
			{join: fb(reward("4", 1)), score: 1, held: 0},
			{join: fb(reward("1", 1)), reason: Unknown, held: 0},
			{join: fb(reward("3", 1)), reason: Duplicate, held: 0},
		}},
		{"recorded again: the latest counts", Options{}, []step{
			{record: "1", arm: "A", held: 1},
			{record: "1", arm: "B", serve: &Served{Model: "m", Experiment: "ab", Arm: "B", Predictions: []Prediction{{Output: "logits", Class: 7}}}, held: 1},
			{join: fb(label("1", 7)), score: 1, held: 0},
		}},
		{"recorded again after its feedback", Options{}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(reward("1", 0.5)), score: 0.5, held: 0},
			{record: "1", arm: "A", held: 1},
			{join: fb(reward("1", 0.75)), score: 0.75, held: 0},
			{join: fb(reward("1", 0.75)), reason: Duplicate, held: 0},
		}},
		{"invalid feedback leaves the request joinable", Options{}, []step{
			{record: "1", arm: "A", held: 1},
			{join: fb(Feedback{ID: "1"}), reason: Invalid, problem: "want a label or a reward", held: 1},
			{join: fb(reward("1", 2)), reason: Invalid, problem: "reward: want a number in [0, 1], got 2", held: 1},
			{join: fb(label("1", 10)), reason: Invalid, problem: `label: class 10 is out of range: output "logits" has 10 classes`, held: 1},
			{join: fb(Feedback{ID: "1", Kind: Label, Class: 1, Output: "probs"}), reason: Invalid, problem: `output: "probs" has no prediction in the request (outputs with one: logits)`, held: 1},
			{join: fb(Feedback{ID: "1", Kind: Reward, Value: 1, Output: "logits"}), reason: Invalid, problem: "a reward is for the whole request", held: 1},
			{join: fb(Feedback{Kind: Reward, Value: 1}), reason: Invalid, problem: "id: missing", held: 1},
			{join: fb(Feedback{ID: "1", Kind: Label, Class: 3, Output: "logits"}), score: 1, held: 0},
		}},
		{"several outputs", Options{}, []step{
			{record: "1", serve: &twoOutputs, held: 1},
			{join: fb(label("1", 1)), reason: Invalid, problem: "output: missing: the request has several outputs with a prediction (a_logits, b_logits)", held: 1},
			{join: fb(Feedback{ID: "1", Kind: Label, Class: 2, Output: "b_logits"}), score: 1, held: 0},
		}},
		{"no prediction: a reward only", Options{}, []step{
			{record: "1", serve: &noPrediction, held: 1},
			{join: fb(label("1", 1)), reason: Invalid, problem: "send a reward", held: 1},
			{record: "2", serve: &batched, held: 2},
			{join: fb(label("2", 1)), reason: Invalid, problem: `output "logits" predicted no single class`, held: 2},
			{join: fb(reward("2", 1)), score: 1, held: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c := newTestWindow(t, tc.opt)
			runSteps(t, w, c, tc.steps)
		})
	}
}

// TestJoined: what a join returns of the request.
func TestJoined(t *testing.T) {
	w, c := newTestWindow(t, Options{})
	at := c.t
	if err := w.Record("7", Served{Model: "m", Experiment: "ab", Arm: "B", Preference: "a=0.5,b=0.5",
		Predictions: []Prediction{{Output: "a_logits", Task: "a", Class: 4}, {Output: "raw", Class: 2}}}); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Second)
	j, err := w.Join("m", Feedback{ID: "7", Kind: Label, Class: 2, Output: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	want := Joined{Model: "m", ID: "7", Experiment: "ab", Arm: "B", Preference: "a=0.5,b=0.5", Served: at,
		Kind: Label, Output: "raw", Task: "raw", Class: 2, Predicted: 2, Score: 1}
	if j != want {
		t.Errorf("joined %+v\nwant %+v", j, want)
	}
	if r := j.Response(); r != (Response{Model: "m", ID: "7", Experiment: "ab", Arm: "B", Kind: "label", Task: "raw", Score: 1}) {
		t.Errorf("response %+v", r)
	}
}

func TestRecordRefuses(t *testing.T) {
	w, _ := newTestWindow(t, Options{})
	for _, s := range []struct {
		id string
		s  Served
	}{
		{"", served("A")},
		{"1", Served{Experiment: "ab", Arm: "A"}},
		{"1", Served{Model: "m", Arm: "A"}},
		{"1", Served{Model: "m", Experiment: "ab"}},
	} {
		if err := w.Record(s.id, s.s); err == nil {
			t.Errorf("Record(%q, %+v) accepted", s.id, s.s)
		}
	}
	if n := w.Len(); n != 0 {
		t.Errorf("%d held", n)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		want string // "" for valid
	}{
		{Options{}, ""},
		{Options{MaxEntries: 1, MaxAge: time.Nanosecond, Remembered: MaxMaxEntries}, ""},
		{Options{MaxEntries: -1}, "max_entries: want a number from 1"},
		{Options{MaxEntries: MaxMaxEntries + 1}, "max_entries"},
		{Options{MaxAge: -time.Second}, "max_age: want a positive duration"},
		{Options{Remembered: -1}, "remembered"},
		{Options{MaxEntries: -1, MaxAge: -1, Remembered: -1}, "3 problems"},
	} {
		_, err := NewWindow(tc.opt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.opt, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
	w, _ := NewWindow(Options{})
	if o := w.Options(); o.MaxEntries != DefaultMaxEntries || o.MaxAge != DefaultMaxAge || o.Remembered != DefaultMaxEntries {
		t.Errorf("defaults: %+v", o)
	}
}

// TestStatus: each reason's error, its sentinel and its statuses, from
// the one table.
func TestStatus(t *testing.T) {
	w, _ := newTestWindow(t, Options{MaxEntries: 1, Remembered: 10})
	if err := w.Record("1", served("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Join("m", reward("1", 1)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"2", "3"} {
		if err := w.Record(id, served("A")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		f        Feedback
		sentinel error
		http     int
		grpc     codes.Code
		msg      string
	}{
		{reward("9", 1), ErrUnknownID, http.StatusNotFound, codes.NotFound, `feedback: model "m": no request with id "9" is held`},
		{reward("2", 1), ErrExpired, http.StatusNotFound, codes.NotFound, `feedback: model "m": request "2" left the window unanswered`},
		{reward("1", 1), ErrDuplicate, http.StatusConflict, codes.AlreadyExists, `feedback: model "m": request "1" took its feedback already`},
		{reward("3", -1), ErrInvalid, http.StatusBadRequest, codes.InvalidArgument, `feedback: model "m": invalid feedback: reward: want a number in [0, 1], got -1`},
	} {
		_, err := w.Join("m", tc.f)
		if !errors.Is(err, tc.sentinel) || HTTPStatus(err) != tc.http || GRPCCode(err) != tc.grpc {
			t.Errorf("%+v: %v: HTTP %d, gRPC %v; want %v, %d, %v", tc.f, err, HTTPStatus(err), GRPCCode(err), tc.sentinel, tc.http, tc.grpc)
		}
		for _, other := range []error{ErrUnknownID, ErrExpired, ErrDuplicate, ErrInvalid} {
			if other != tc.sentinel && errors.Is(err, other) {
				t.Errorf("%v is also %v", err, other)
			}
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("message %q, want it to start %q", err, tc.msg)
		}
		var e *Error
		if errors.As(err, &e) {
			if s := e.GRPCStatus(); s.Code() != tc.grpc || s.Message() != err.Error() {
				t.Errorf("gRPC status %v", s)
			}
		}
	}
	if HTTPStatus(nil) != http.StatusOK || GRPCCode(nil) != codes.OK {
		t.Error("nil is not OK")
	}
	other := fmt.Errorf("disk on fire")
	if HTTPStatus(other) != http.StatusInternalServerError || GRPCCode(other) != codes.Internal {
		t.Error("another error is not internal")
	}
}
