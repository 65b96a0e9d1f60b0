package rayservice

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// serveConfig is a Serve config ready to submit: the user's serveConfigV2 as a JSON object.
type serveConfig struct {
	doc  map[string]any
	hash string
	apps []string
}

// parseServeConfig turns serveConfigV2 (YAML) into the JSON document the dashboard takes.
// An empty config means "no applications": nothing is submitted.
func parseServeConfig(yamlText string) (*serveConfig, error) {
	doc := map[string]any{}
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		return nil, fmt.Errorf("serveConfigV2 is not valid YAML: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	return newServeConfig(doc)
}

// parseSubmittedConfig reads the config recorded on a RayCluster (JSON, no target_capacity).
func parseSubmittedConfig(jsonText string) (*serveConfig, error) {
	doc := map[string]any{}
	if err := json.Unmarshal([]byte(jsonText), &doc); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object: %w", ServeConfigKey, err)
	}
	return newServeConfig(doc)
}

func newServeConfig(doc map[string]any) (*serveConfig, error) {
	// target_capacity is raygate's to set during incremental upgrades, and is recorded on its
	// own; it never takes part in "did the config change".
	delete(doc, "target_capacity")
	b, err := json.Marshal(doc) // map keys are sorted: the encoding is canonical
	if err != nil {
		return nil, fmt.Errorf("encoding serve config: %w", err)
	}
	sum := sha256.Sum256(b)
	c := &serveConfig{doc: doc, hash: hex.EncodeToString(sum[:])[:16]}
	if apps, ok := doc["applications"].([]any); ok {
		for _, a := range apps {
			m, _ := a.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				name = "default" // Ray's default application name
			}
			c.apps = append(c.apps, name)
		}
	}
	return c, nil
}

// empty reports whether there is nothing to submit.
func (c *serveConfig) empty() bool { return c == nil || len(c.doc) == 0 }

// json is the config without target_capacity (what is recorded on the cluster).
func (c *serveConfig) json() string {
	b, _ := json.Marshal(c.doc)
	return string(b)
}

// body is what is PUT to the dashboard: the config plus target_capacity when set.
func (c *serveConfig) body(targetCapacity *int32) []byte {
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

// submitted is what a RayCluster's annotations say was last accepted by its dashboard.
type submitted struct {
	Hash           string
	Config         string
	TargetCapacity *int32
}

func submittedOn(c *rayv1.RayCluster) submitted {
	s := submitted{Hash: c.Annotations[rayv1.ServeConfigHashKey], Config: c.Annotations[ServeConfigKey]}
	if v, err := strconv.ParseInt(c.Annotations[rayv1.ServeConfigTargetCapacityKey], 10, 32); err == nil {
		tc := int32(v)
		s.TargetCapacity = &tc
	}
	return s
}

// submitDecision says whether a cluster needs its Serve config (re)submitted, and why.
type submitDecision struct {
	Submit bool
	Reason string
}

// decideSubmit compares what a cluster should run with what its annotations record and what
// its dashboard reports. Nothing is kept in memory, so an operator restart neither resubmits
// a config the cluster already has nor forgets one it lost.
func decideSubmit(rec submitted, want *serveConfig, wantTC *int32, dashboardApps int) submitDecision {
	switch {
	case want.empty():
		return submitDecision{Reason: "serveConfigV2 is empty"}
	case rec.Hash == "":
		return submitDecision{Submit: true, Reason: "no serve config submitted to this cluster yet"}
	case rec.Hash != want.hash:
		return submitDecision{Submit: true, Reason: "the serve config changed"}
	case len(want.apps) > 0 && dashboardApps == 0:
		return submitDecision{Submit: true, Reason: "the dashboard reports no Serve applications (head restarted?)"}
	case !equalPtr(rec.TargetCapacity, wantTC):
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
