package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultBudget bounds the time one validating review spends on what it asks the API
// server (namespace, quotas, GatewayClass, shared Gateway, cert-manager, the pods' dry-run):
// well inside the API server's 5-second webhook timeout, with room for the review itself
// and the network. Past it the object is admitted with a warning naming what did not run:
// these checks only anticipate what the API server and the controllers enforce later.
const DefaultBudget = 3 * time.Second

// WarnOutOfTime: lookups the budget did not leave time for.
const WarnOutOfTime = "admission's time budget (%s) ran out before it could check %s; the object was admitted without these checks"

type budgetKey struct{}

// budget records the checks a review's deadline cut short.
type budget struct {
	limit  time.Duration
	mu     sync.Mutex
	missed []string
}

// withBudget starts a review's time budget: every lookup and dry-run runs within ctx. The
// budget stays below the timeout the API server gave the webhook call (timeoutSeconds of the
// webhook configuration, which an admin may lower).
func withBudget(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	if timeout, ok := ctx.Value(webhookTimeoutKey{}).(time.Duration); ok {
		limit = budgetWithin(limit, timeout)
	}
	ctx = context.WithValue(ctx, budgetKey{}, &budget{limit: limit})
	return context.WithTimeout(ctx, limit)
}

type webhookTimeoutKey struct{}

// withWebhookTimeout keeps the timeout the API server gives a webhook call: it sends it as
// the timeout query parameter.
func withWebhookTimeout(ctx context.Context, r *http.Request) context.Context {
	if d, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && d > 0 {
		return context.WithValue(ctx, webhookTimeoutKey{}, d)
	}
	return ctx
}

// budgetWithin is the budget of a review whose call times out after timeout: limit, but a
// second less than the timeout at most (for the review, the answer and the network), and
// half the timeout below two seconds.
func budgetWithin(limit, timeout time.Duration) time.Duration {
	room := timeout - time.Second
	if timeout < 2*time.Second {
		room = timeout / 2
	}
	return min(limit, room)
}

// outOfTime records that check did not run when err says the deadline passed.
func outOfTime(ctx context.Context, err error, check string) {
	b, ok := ctx.Value(budgetKey{}).(*budget)
	if !ok || !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.missed = append(b.missed, check)
}

// budgetOf is the review's time budget (DefaultBudget outside a review).
func budgetOf(ctx context.Context) time.Duration {
	if b, ok := ctx.Value(budgetKey{}).(*budget); ok {
		return b.limit
	}
	return DefaultBudget
}

// budgetWarnings name the lookups the deadline cut short.
func budgetWarnings(ctx context.Context) []string {
	b, ok := ctx.Value(budgetKey{}).(*budget)
	if !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.missed) == 0 {
		return nil
	}
	return []string{fmt.Sprintf(WarnOutOfTime, b.limit, strings.Join(b.missed, ", "))}
}
