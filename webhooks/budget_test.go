package webhooks

import (
	"testing"
	"time"
)

func TestBudgetWithin(t *testing.T) {
	for _, tt := range []struct{ limit, timeout, want time.Duration }{
		{3 * time.Second, 5 * time.Second, 3 * time.Second},
		{3 * time.Second, 30 * time.Second, 3 * time.Second},
		{3 * time.Second, 3 * time.Second, 2 * time.Second},
		{3 * time.Second, 2 * time.Second, time.Second},
		{3 * time.Second, time.Second, 500 * time.Millisecond},
	} {
		if got := budgetWithin(tt.limit, tt.timeout); got != tt.want {
			t.Errorf("budgetWithin(%s, %s) = %s; want %s", tt.limit, tt.timeout, got, tt.want)
		}
	}
}
