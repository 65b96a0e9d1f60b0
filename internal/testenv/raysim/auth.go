package raysim

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized answers 401, as a Ray dashboard with token authentication does, when the
// simulator requires a token (Options.RequireToken) and the request does not carry it as
// "Authorization: Bearer <token>". It counts what it refused.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.RequireToken == nil {
		return true
	}
	want := s.opts.RequireToken(s.cluster)
	if want == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
		return true
	}
	s.unauthorized.Add(1)
	http.Error(w, "Unauthorized: missing or invalid authentication token", http.StatusUnauthorized)
	return false
}

// Unauthorized is how many requests were refused for a missing or wrong token.
func (s *Server) Unauthorized() int64 { return s.unauthorized.Load() }
