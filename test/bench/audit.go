package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// operatorUser is the user the operator under test authenticates as; the audit policy
// records only this user, so every counted request is the operator's.
const operatorUser = "raygate-operator"

// auditPolicy records the operator's requests at Metadata level (verb, resource, response
// code, timestamps — no bodies) and nothing else. RequestReceived is omitted: each request
// then has one ResponseComplete event (watches also one ResponseStarted, deduplicated by
// auditID).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + operatorUser + `"]
- level: None
`

// auditPolicyAll records every user's requests at Metadata level (-audit-all), so a run can
// compare the whole cluster's work per object, component by component.
const auditPolicyAll = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// request is one API request as the audit log saw it.
type request struct {
	Agent    string    // the client program: the user agent up to its first '/'
	Verb     string    // get, list, watch, create, update, patch, delete, deletecollection
	Resource string    // e.g. "pods", "rayclusters/status"
	Name     string    // the object's name; empty for lists, watches and collections
	Code     int       // HTTP status code (0 for a watch still open)
	Time     time.Time // when the API server received it
}

// isWrite reports whether a verb changes state.
func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

type auditEvent struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// parseAudit reads a JSON-lines audit log and returns user's requests (everyone's when user
// is empty), one per auditID (the ResponseComplete event when there is one), in order of
// arrival. Requests without an object (discovery, /healthz) are kept with an empty Resource.
func parseAudit(r io.Reader, user string) ([]request, error) {
	byID := map[string]int{}
	var reqs []request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", line, err)
		}
		if user != "" && ev.User.Username != user {
			continue
		}
		agent, _, _ := strings.Cut(ev.UserAgent, "/")
		req := request{Agent: agent, Verb: ev.Verb, Time: ev.RequestReceivedTimestamp}
		if ev.ObjectRef != nil {
			req.Resource, req.Name = ev.ObjectRef.Resource, ev.ObjectRef.Name
			if ev.ObjectRef.Subresource != "" {
				req.Resource += "/" + ev.ObjectRef.Subresource
			}
		}
		if ev.ResponseStatus != nil && ev.Stage == "ResponseComplete" {
			req.Code = ev.ResponseStatus.Code
		}
		if i, seen := byID[ev.AuditID]; seen {
			if ev.Stage == "ResponseComplete" {
				reqs[i] = req
			}
			continue
		}
		byID[ev.AuditID] = len(reqs)
		reqs = append(reqs, req)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Time.Before(reqs[j].Time) })
	return reqs, nil
}

// readAudit returns the operator's requests; readAuditAll everyone's (with -audit-all).
func readAudit(path string) ([]request, error) { return readAuditOf(path, operatorUser) }

func readAuditAll(path string) ([]request, error) { return readAuditOf(path, "") }

func readAuditOf(path, user string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAudit(f, user)
}

// writesPerObject counts writes per object, by client program ("raygate", "kube-scheduler",
// …, and "(all)") and by "client verb resource".
func writesPerObject(reqs []request, n int) (byAgent, byKind map[string]float64) {
	byAgent, byKind = map[string]float64{}, map[string]float64{}
	for _, r := range reqs {
		if isWrite(r.Verb) {
			byAgent[r.Agent] += 1 / float64(n)
			byAgent["(all)"] += 1 / float64(n)
			byKind[r.Agent+" "+r.Verb+" "+r.Resource] += 1 / float64(n)
		}
	}
	return byAgent, byKind
}

// window keeps the requests received in [from, to).
func window(reqs []request, from, to time.Time) []request {
	var out []request
	for _, r := range reqs {
		if !r.Time.Before(from) && r.Time.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

// requestCounts summarises requests.
type requestCounts struct {
	Total int `json:"total"`
	// ByVerb counts every request by verb.
	ByVerb map[string]int `json:"byVerb"`
	// Writes counts the state-changing requests, and WritesByKind them by "verb resource".
	Writes       int            `json:"writes"`
	WritesByKind map[string]int `json:"writesByKind"`
	// Conflicts are writes refused with 409 (stale reads); Errors other responses ≥ 400.
	Conflicts int `json:"conflicts"`
	Errors    int `json:"errors"`
}

func count(reqs []request) requestCounts {
	c := requestCounts{ByVerb: map[string]int{}, WritesByKind: map[string]int{}}
	for _, r := range reqs {
		c.Total++
		c.ByVerb[r.Verb]++
		if isWrite(r.Verb) {
			c.Writes++
			c.WritesByKind[r.Verb+" "+r.Resource]++
			switch {
			case r.Code == 409:
				c.Conflicts++
			case r.Code >= 400:
				c.Errors++
			}
		}
	}
	return c
}
