package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// ServeConfig is a Serve config ready to submit: the user's serveConfigV2 as a JSON object.
type ServeConfig struct {
	doc  map[string]any
	hash string
	apps []string
	// source is the text it was parsed from (serveConfigV2, or a record), kept in the
	// cluster's serve config record: at most the serveConfigV2 size limit, where the JSON
	// form, with YAML aliases expanded, can be four times larger.
	source string
}

// emptyConfigHash is the hash of "no applications", the config of a cluster never given one.
var emptyConfigHash = func() string {
	c, _ := newServeConfig(map[string]any{})
	return c.hash
}()

// ParseServeConfig turns serveConfigV2 (YAML) into the JSON document the dashboard takes.
// An empty config means "no applications": nothing is submitted.
func ParseServeConfig(yamlText string) (*ServeConfig, error) {
	doc := map[string]any{}
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		return nil, fmt.Errorf("serveConfigV2 is not valid YAML: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	c, err := newServeConfig(doc)
	if c != nil {
		c.source = yamlText
	}
	return c, err
}

// parseLegacyConfig reads the config older raygate versions recorded in an annotation
// (JSON, no target_capacity).
func parseLegacyConfig(jsonText string) (*ServeConfig, error) {
	doc := map[string]any{}
	if err := json.Unmarshal([]byte(jsonText), &doc); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object: %w", LegacyServeConfigKey, err)
	}
	c, err := newServeConfig(doc)
	if c != nil {
		c.source = jsonText
	}
	return c, err
}

func newServeConfig(doc map[string]any) (*ServeConfig, error) {
	// A target_capacity the user wrote is part of the config, as in KubeRay: it reaches the
	// dashboard, and a change of it alone resubmits the config (to the serving cluster; it
	// never makes a new cluster). With the incremental strategy raygate sets the target
	// capacity of each cluster over it (see body).
	b, err := json.Marshal(doc) // map keys are sorted: the encoding is canonical
	if err != nil {
		return nil, fmt.Errorf("encoding serve config: %w", err)
	}
	sum := sha256.Sum256(b)
	c := &ServeConfig{doc: doc, hash: hex.EncodeToString(sum[:])[:16]}
	if apps, ok := doc["applications"].([]any); ok {
		for _, a := range apps {
			m, _ := a.(map[string]any)
			name, _ := m["name"].(string)
			c.apps = append(c.apps, rayspec.ServeAppName(name))
		}
	}
	return c, nil
}

// empty reports whether there is nothing to submit.
func (c *ServeConfig) empty() bool { return c == nil || len(c.doc) == 0 }

// Hash names the config: the same config has the same hash, in every process.
func (c *ServeConfig) Hash() string { return c.hash }

// Source is the text the config was parsed from, which the cluster's record keeps.
func (c *ServeConfig) Source() string { return c.source }

// Body is what is PUT to the dashboard: the config, with targetCapacity, when set, over the
// config's own target_capacity.
func (c *ServeConfig) Body(targetCapacity *int32) []byte {
	doc := make(map[string]any, len(c.doc)+1)
	for k, v := range c.doc {
		doc[k] = v
	}
	if targetCapacity != nil {
		doc["target_capacity"] = *targetCapacity
	}
	b, _ := json.Marshal(doc)
	return b
}

// submitted is what a cluster runs: the serve config its record says its dashboard
// accepted, and the target capacity the dashboard last accepted (this process heard it) or
// reports. A change of target capacity alone is not recorded on the cluster: the dashboard
// says what it runs, so an operator restart reads it there, and every step of an
// incremental upgrade is not a RayCluster write.
type submitted struct {
	Hash           string
	TargetCapacity *int32
	// TCUnknown: the dashboard has not been read since this process started (or since the
	// head accepted a config), so the target capacity it runs is not known yet.
	TCUnknown bool
	// Legacy is the config an older raygate recorded with it ("": none).
	Legacy string
}

// submittedOn is the record on a cluster: the hash of the config its dashboard accepted.
// The target capacity older raygate versions recorded with it is not read: it was not kept
// up to date since.
func submittedOn(c *rayv1.RayCluster) submitted {
	return submitted{Hash: c.Annotations[rayv1.ServeConfigHashKey], Legacy: c.Annotations[LegacyServeConfigKey], TCUnknown: true}
}

// runsOn is what a cluster runs: what its dashboard accepted last, when this process heard
// it; else the record's config at the target capacity the dashboard reports with its
// applications (unknown until they are read).
func runsOn(rec submitted, v ServeView) submitted {
	switch {
	case v.Accepted != nil:
		return submitted{Hash: v.Accepted.Hash, TargetCapacity: v.Accepted.TargetCapacity}
	case v.Apps != nil:
		rec.TargetCapacity, rec.TCUnknown = v.TargetCapacity, false
	}
	return rec
}

// runsTC reports whether the cluster is known to run target capacity tc.
func (s submitted) runsTC(tc *int32) bool {
	return !s.TCUnknown && equalPtr(s.TargetCapacity, tc)
}

// tcText says which target capacity the cluster runs, for messages.
func (s submitted) tcText() string {
	if s.TCUnknown {
		return "not read yet"
	}
	return Percent(s.TargetCapacity)
}

// submissionID names a submission of a config at a target capacity, for the dashboard
// pool: the same ID is the same request.
func submissionID(hash string, tc *int32) string {
	if tc == nil {
		return hash + "@-"
	}
	return hash + "@" + strconv.Itoa(int(*tc))
}

// ParseSubmissionID is submissionID's inverse.
func ParseSubmissionID(id string) (hash string, tc *int32, ok bool) {
	hash, v, ok := strings.Cut(id, "@")
	if !ok || hash == "" {
		return "", nil, false
	}
	if v == "-" {
		return hash, nil, true
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return "", nil, false
	}
	t := int32(n)
	return hash, &t, true
}

// submitDecision says whether a cluster needs its Serve config (re)submitted, and why.
type submitDecision struct {
	Submit bool
	Reason string
}

// decideSubmit compares what a cluster should run with what its annotations record and what
// its dashboard reports. Nothing but a cache of the dashboards' answers is kept in memory,
// so an operator restart neither resubmits a config the cluster already has nor forgets one
// it lost. acceptedHere: this head accepted the wanted config since it started, so no
// applications means the config has none (not that the head restarted).
func decideSubmit(rec submitted, want wanted, dashboardApps int, acceptedHere bool) submitDecision {
	switch {
	case want.empty():
		return submitDecision{Reason: "serveConfigV2 is empty"}
	case rec.Hash == "":
		return submitDecision{Submit: true, Reason: "no serve config submitted to this cluster yet"}
	case rec.Hash != want.Hash:
		return submitDecision{Submit: true, Reason: "the serve config changed"}
	case want.hasApps() && dashboardApps == 0 && !acceptedHere:
		return submitDecision{Submit: true, Reason: "the dashboard reports no Serve applications (head restarted?)"}
	case !rec.runsTC(want.TC):
		return submitDecision{Submit: true, Reason: "the target capacity changed"}
	}
	return submitDecision{Reason: "the cluster runs the wanted serve config"}
}

func equalPtr(a, b *int32) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
