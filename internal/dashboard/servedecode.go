package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ParseServeDetails reads a Serve status answer (GET /api/serve/applications/) as raygate
// keeps it: only what the controller reads (names, statuses, messages, route prefixes, target
// capacity),
// text sanitized and cut, at most MaxApplications applications and MaxDeployments
// deployments in all, and small enough for a status (MaxStatusBytes). The applications and
// deployments are decoded one at a time and counted as they come, so a dense answer is
// refused after at most the first one over the bound: it costs no more memory than an
// answer at the bound. Errors are a *DenseError, or one that quotes nothing of the answer.
func ParseServeDetails(data []byte) (*ServeDetails, error) {
	w := wireDetails{Applications: wireApps{deploymentsLeft: MaxDeployments}}
	if err := json.Unmarshal(data, &w); err != nil {
		if dense := (*DenseError)(nil); errors.As(err, &dense) {
			return nil, dense
		}
		// The decoder's message may quote the answer; keep only the kind of problem.
		return nil, errors.New("the answer is not a Serve status (invalid JSON)")
	}
	d := &ServeDetails{
		Applications:   w.Applications.apps,
		TargetCapacity: w.TargetCapacity,
		DeployMode:     Sanitize(w.DeployMode, maxState),
		ProxyLocation:  Sanitize(w.ProxyLocation, maxState),
	}
	if d.Applications == nil {
		d.Applications = map[string]Application{}
	}
	if err := d.fitStatus(); err != nil {
		return nil, err
	}
	return d, nil
}

// wireDetails is the part of ServeInstanceDetails raygate decodes; what it does not name
// (http_options, each application's deployed_app_config, replicas...) is skipped unread.
type wireDetails struct {
	Applications   wireApps `json:"applications"`
	TargetCapacity *float64 `json:"target_capacity"`
	DeployMode     string   `json:"deploy_mode"`
	ProxyLocation  string   `json:"proxy_location"`
}

// wireApps decodes the applications one at a time, refusing the first one over
// MaxApplications and the first deployment over the answer's deploymentsLeft.
type wireApps struct {
	apps            map[string]Application
	seen            int
	deploymentsLeft int
}

func (w *wireApps) UnmarshalJSON(data []byte) error {
	w.apps = map[string]Application{}
	return eachMember(data, func(key string, dec *json.Decoder) error {
		if w.seen++; w.seen > MaxApplications {
			return tooManyApplications()
		}
		a := wireApp{Deployments: wireDeployments{left: &w.deploymentsLeft}}
		if err := dec.Decode(&a); err != nil {
			return err
		}
		if name, ok := keptName(key); ok {
			w.apps[name] = Application{
				Name:        Sanitize(a.Name, maxName),
				RoutePrefix: sanitized(a.RoutePrefix, maxName),
				Status:      Sanitize(a.Status, maxState),
				Message:     Sanitize(a.Message, maxMessage),
				Deployments: a.Deployments.deps,
			}
		}
		return nil
	})
}

// wireApp is the part of an ApplicationDetails raygate decodes.
type wireApp struct {
	Name        string          `json:"name"`
	RoutePrefix *string         `json:"route_prefix"`
	Status      string          `json:"status"`
	Message     string          `json:"message"`
	Deployments wireDeployments `json:"deployments"`
}

// wireDeployments decodes an application's deployments one at a time, taking each from
// the answer's allowance (left).
type wireDeployments struct {
	deps map[string]Deployment
	left *int
}

func (w *wireDeployments) UnmarshalJSON(data []byte) error {
	w.deps = map[string]Deployment{}
	return eachMember(data, func(key string, dec *json.Decoder) error {
		if *w.left == 0 {
			return tooManyDeployments()
		}
		*w.left--
		var d wireDeployment
		if err := dec.Decode(&d); err != nil {
			return err
		}
		if name, ok := keptName(key); ok {
			w.deps[name] = Deployment{
				Name:          Sanitize(d.Name, maxName),
				Status:        Sanitize(d.Status, maxState),
				StatusTrigger: Sanitize(d.StatusTrigger, 64),
				Message:       Sanitize(d.Message, maxMessage),
			}
		}
		return nil
	})
}

// sanitized is Sanitize of *s (nil: nil).
func sanitized(s *string, limit int) *string {
	if s == nil {
		return nil
	}
	v := Sanitize(*s, limit)
	return &v
}

// wireDeployment is the part of a DeploymentDetails raygate decodes.
type wireDeployment struct {
	Name          string `json:"name"`
	Status        string `json:"status"`
	StatusTrigger string `json:"status_trigger"`
	Message       string `json:"message"`
}

// eachMember calls member for each member of the JSON object data, with the decoder
// positioned at the member's value, which member must read; null is an empty object.
func eachMember(data []byte, member func(key string, dec *json.Decoder) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := member(key, dec); err != nil {
			return err
		}
	}
	return nil
}
