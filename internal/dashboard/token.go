package dashboard

import "net/http"

// BearerToken is a Ray cluster's auth token. It prints, formats and marshals as a
// placeholder, so a Target or a client can be logged without leaking it.
type BearerToken string

const redacted = "<redacted>"

// String implements fmt.Stringer.
func (BearerToken) String() string { return redacted }

// GoString implements fmt.GoStringer.
func (BearerToken) GoString() string { return redacted }

// MarshalJSON keeps the token out of structured logs.
func (BearerToken) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText keeps the token out of text encodings.
func (BearerToken) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// authorize sets the Authorization header Ray's token authentication checks ("" sends
// none: the cluster has no token).
func (t BearerToken) authorize(req *http.Request) {
	if t != "" {
		req.Header.Set("Authorization", "Bearer "+string(t))
	}
}
