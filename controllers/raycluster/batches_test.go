package raycluster

import (
	"errors"
	"sync"
	"testing"
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
