package framework

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitSyncedSaysWhyTheManagerStopped(t *testing.T) {
	listenErr := errors.New("listen tcp 127.0.0.1:40001: bind: address already in use")
	untilCancelled := func(ctx context.Context) bool { <-ctx.Done(); return false }
	for _, tc := range []struct {
		name    string
		synced  func(context.Context) bool
		startOK bool  // Start is still running when the wait ends
		startEr error // else what Start returned, before the caches synced
		want    string
		wantFor error // what Stop then reads from done
	}{
		{name: "synced", synced: func(context.Context) bool { return true }, startOK: true},
		{name: "start failed first", synced: untilCancelled, startEr: listenErr,
			want: "manager stopped before its caches synced: " + listenErr.Error(), wantFor: listenErr},
		{name: "start returned nil first", synced: untilCancelled,
			want: "manager stopped before its caches synced: it returned no error"},
		{name: "never synced", synced: untilCancelled, startOK: true, want: "manager caches did not sync within 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, done := make(chan error, 1), make(chan error, 1)
			if !tc.startOK {
				started <- tc.startEr
			}
			begin := time.Now()
			err := waitSynced(context.Background(), tc.synced, started, done, 200*time.Millisecond)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if !tc.startOK && time.Since(begin) > 100*time.Millisecond {
				t.Errorf("waited %s for a manager that had stopped", time.Since(begin))
			}
			if tc.startOK { // Start returns later, when Stop cancels it: Stop must still read it
				started <- listenErr
				tc.wantFor = listenErr
			}
			select {
			case got := <-done:
				if !errors.Is(got, tc.wantFor) { // errors.Is(nil, nil) holds
					t.Errorf("Stop would read %v, want %v", got, tc.wantFor)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Start's result never reached done")
			}
		})
	}
}
