package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTokenIsSentAsBearer(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"applications":{}}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		token BearerToken
		want  string
	}{{"s3cret", "Bearer s3cret"}, {"", ""}} {
		got = nil
		c := &HTTPClient{BaseURL: srv.URL, Token: tc.token}
		if _, err := c.GetServeDetails(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.DeployApplications(context.Background(), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != tc.want || got[1] != tc.want {
			t.Errorf("token %q: Authorization headers %q, want %q twice", string(tc.token), got, tc.want)
		}
	}
}

func TestTokenNeverPrints(t *testing.T) {
	target := Target{URL: "http://10.0.0.1:8265", Token: "s3cret"}
	js, err := json.Marshal(target)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(target), fmt.Sprintf("%v %+v %#v %s", target, target, target, target.Token), string(js)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("the token leaks: %s", s)
		}
	}
}
