package promgate

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

func TestRender(t *testing.T) {
	v := Vars{Namespace: "team-a", RayService: "svc", Pending: `p"x\`, Active: "a"}
	got, err := Render(`sum(rate(x{namespace="{{namespace}}",svc="{{rayservice}}",pod=~"{{pending}}-.*",old="{{active}}"}[1m]))`, v)
	if err != nil {
		t.Fatal(err)
	}
	want := `sum(rate(x{namespace="team-a",svc="svc",pod=~"p\"x\\-.*",old="a"}[1m]))`
	if got != want {
		t.Errorf("Render = %s, want %s", got, want)
	}
	for _, q := range []string{"up{x=\"{{secret}}\"}", "{{ namespace }}", "{{}}"} {
		if _, err := Render(q, v); err == nil {
			t.Errorf("Render(%q) accepted an unknown placeholder", q)
		}
	}
}

// scripted answers the query API with the body registered for the query.
func scripted(t *testing.T, answers map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.URL.Path != "/api/v1/query" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		body, ok := answers[r.Form.Get("query")]
		switch {
		case !ok:
			http.Error(w, "unknown", http.StatusBadRequest)
		case strings.HasPrefix(body, "sleep"):
			time.Sleep(2 * time.Second)
		case strings.HasPrefix(body, "redirect"):
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func vector(values ...string) string {
	var parts []string
	for i, v := range values {
		parts = append(parts, fmt.Sprintf(`{"metric":{"i":"%d"},"value":[1700000000,"%s"]}`, i, v))
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(parts, ",") + `]}}`
}

func TestEvaluate(t *testing.T) {
	big := vector(strings.Split(strings.Repeat("1,", 101), ",")[:101]...)
	srv := scripted(t, map[string]string{
		"ok":       vector("0.5", "0.7"),
		"scalar":   `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"3"]}}`,
		"empty":    vector(),
		"nan":      vector("NaN"),
		"many":     big,
		"slow":     "sleep",
		"redirect": "redirect",
		"huge":     vector(strings.Repeat("1", 20000)),
	})
	c, err := New(srv.URL, Options{MaxBytes: 16384, Budget: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gates := []raygatev1alpha1.Gate{{Name: "ok", Query: "ok"}, {Name: "scalar", Query: "scalar"}, {Name: "empty", Query: "empty"},
		{Name: "nan", Query: "nan"}, {Name: "many", Query: "many"}, {Name: "slow", Query: "slow"}, {Name: "redirect", Query: "redirect"},
		{Name: "huge", Query: "huge"}, {Name: "unknown", Query: "unknown"}, {Name: "placeholder", Query: "{{nope}}"}}
	res := c.Evaluate(context.Background(), gates, 500*time.Millisecond, Vars{})
	byName := map[string]Result{}
	for _, r := range res {
		byName[r.Gate] = r
	}
	check := func(name string, values int, errPart string) {
		t.Helper()
		r := byName[name]
		if len(r.Values) != values || (errPart == "") != (r.Err == "") || !strings.Contains(r.Err, errPart) {
			t.Errorf("%s: values %v err %q; want %d values, err containing %q", name, r.Values, r.Err, values, errPart)
		}
	}
	check("ok", 2, "")
	check("scalar", 1, "")
	check("empty", 0, "")
	check("nan", 0, "")
	check("many", 0, "101 series")
	check("slow", 0, "deadline")
	check("redirect", 0, "302")
	check("huge", 0, "size limit")
	check("unknown", 0, "bad_response")
	check("placeholder", 0, "unknown placeholders")
}

func TestEvaluateBudget(t *testing.T) {
	srv := scripted(t, map[string]string{"slow": "sleep"})
	c, err := New(srv.URL, Options{Budget: 700 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := c.Evaluate(context.Background(), []raygatev1alpha1.Gate{{Name: "a", Query: "slow"}, {Name: "b", Query: "slow"}, {Name: "c", Query: "slow"}}, 10*time.Second, Vars{})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("three slow queries took %s; the budget is 700ms", d)
	}
	for _, r := range res {
		if r.Err == "" {
			t.Errorf("%s: no error past the budget", r.Gate)
		}
	}
}

func TestValidateURL(t *testing.T) {
	for u, ok := range map[string]bool{"http://prometheus.monitoring:9090": true, "https://p/x": true, "ftp://p": false, "http://u:p@p": false, "p:9090": false, "http://": false} {
		if err := ValidateURL(u); (err == nil) != ok {
			t.Errorf("ValidateURL(%q) = %v", u, err)
		}
	}
}
