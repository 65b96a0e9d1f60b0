package raysim

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/internal/dashboard"
)

func TestRequireToken(t *testing.T) {
	s, c := start(t, Options{RequireToken: func(types.NamespacedName) string { return "s3cret" }})
	ctx := context.Background()
	for _, token := range []dashboard.BearerToken{"", "wrong"} {
		c.Token = token
		_, err := c.GetServeDetails(ctx)
		var de *dashboard.Error
		if !errors.As(err, &de) || de.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: got %v, want HTTP 401", string(token), err)
		}
		if err := c.DeployApplications(ctx, []byte(twoApps)); err == nil {
			t.Fatalf("token %q: a deploy was accepted", string(token))
		}
	}
	if got := s.Unauthorized(); got != 4 {
		t.Errorf("Unauthorized() = %d, want 4", got)
	}
	if len(s.Submissions()) != 0 {
		t.Fatal("a refused deploy was applied")
	}
	c.Token = "s3cret"
	if err := c.DeployApplications(ctx, []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetServeDetails(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.Submissions()) != 1 || s.Unauthorized() != 4 {
		t.Errorf("with the token: %d submissions, %d refused; want 1, 4", len(s.Submissions()), s.Unauthorized())
	}
}
