package raycluster

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestSlowStartBatches(t *testing.T) {
	boom := errors.New("quota exceeded")
	cases := []struct {
		name      string
		n         int
		failFrom  int // calls with i >= failFrom fail (-1: none)
		wantErr   error
		wantCalls int
	}{
		{name: "none", n: 0, failFrom: -1, wantCalls: 0},
		{name: "one", n: 1, failFrom: -1, wantCalls: 1},
		{name: "all succeed in batches 1+2+4", n: 7, failFrom: -1, wantCalls: 7},
		{name: "last batch is short", n: 10, failFrom: -1, wantCalls: 10},
		{name: "first create fails: nothing else tried", n: 10, failFrom: 0, wantErr: boom, wantCalls: 1},
		{name: "failure in the batch of 4 stops before the batch of 8", n: 20, failFrom: 5, wantErr: boom, wantCalls: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]bool{}
			err := slowStartBatches(tc.n, func(i int) error {
				mu.Lock()
				defer mu.Unlock()
				if seen[i] {
					t.Errorf("index %d called twice", i)
				}
				seen[i] = true
				if tc.failFrom >= 0 && i >= tc.failFrom {
					return boom
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if len(seen) != tc.wantCalls {
				t.Fatalf("%d calls, want %d", len(seen), tc.wantCalls)
			}
		})
	}
}

// TestSlowStartBatchesCapsCreatesInFlight: a group of the default bound's size (5,000 pods)
// never has more than 64 creates running at once, and the batches reach it.
func TestSlowStartBatchesCapsCreatesInFlight(t *testing.T) {
	const limit = 64 // the documented cap (docs/admission.md)
	cases := []struct {
		name     string
		n        int
		wantPeak int
	}{
		{name: "below the cap", n: 40, wantPeak: 16}, // batches 1, 2, 4, 8, 16, 9
		{name: "one full batch at the cap", n: 127, wantPeak: limit},
		{name: "the default group bound", n: 5000, wantPeak: limit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu             sync.Mutex
				inFlight, peak int
				calls          int
			)
			// Each call sleeps, so the calls of a batch overlap and the peak is the largest
			// batch (unless the scheduler runs fewer at once, which is logged).
			err := slowStartBatches(tc.n, func(int) error {
				mu.Lock()
				inFlight++
				calls++
				peak = max(peak, inFlight)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inFlight--
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != tc.n {
				t.Fatalf("%d calls, want %d", calls, tc.n)
			}
			if peak > limit {
				t.Fatalf("%d creates in flight at once, over the cap of %d", peak, limit)
			}
			if peak != tc.wantPeak {
				t.Logf("peak %d creates in flight (largest batch %d): the scheduler did not run a whole batch at once", peak, tc.wantPeak)
			}
		})
	}
}
