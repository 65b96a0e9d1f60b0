// Package dashboard is a client for the Ray dashboard's Serve REST API, the part of it a
// RayService needs: read the status of the Serve applications (GET /api/serve/applications/)
// and declaratively deploy a Serve config with a target capacity (PUT on the same path).
//
// A Resolver turns a RayCluster's head pod into the dashboard's base URL, so the controller
// talks to the head pod's IP in production and to simulators in tests and the local mode. A
// Pool carries out the requests off the controller's reconciles, with bounds per namespace.
package dashboard

import "encoding/json"

// ApplicationsPath is the Serve REST API path for reading and deploying applications.
const ApplicationsPath = "/api/serve/applications/"

// ServeDetails is the subset of Ray's ServeInstanceDetails (the GET response) raygate reads.
// Unknown fields are ignored, so newer Ray versions keep working. The client fills only what
// the controller reads (ParseServeDetails); the simulators serve the other fields.
type ServeDetails struct {
	// Applications are the Serve applications, by name.
	Applications map[string]Application `json:"applications"`
	// TargetCapacity is the target_capacity of the last deployed config (nil: unset).
	TargetCapacity *float64 `json:"target_capacity,omitempty"`
	// DeployMode is MULTI_APP for configs deployed through this API.
	DeployMode string `json:"deploy_mode,omitempty"`
	// ProxyLocation and HTTPOptions are echoed by Ray; kept for diagnostics.
	ProxyLocation string          `json:"proxy_location,omitempty"`
	HTTPOptions   json.RawMessage `json:"http_options,omitempty"`
}

// Application is one Serve application (Ray's ApplicationDetails).
type Application struct {
	Name        string                `json:"name"`
	RoutePrefix *string               `json:"route_prefix"`
	DocsPath    *string               `json:"docs_path"`
	Status      string                `json:"status"`
	Message     string                `json:"message"`
	LastDeploy  float64               `json:"last_deployed_time_s"`
	Source      string                `json:"source,omitempty"`
	Deployments map[string]Deployment `json:"deployments"`
	// DeployedAppConfig is the application config exactly as submitted.
	DeployedAppConfig json.RawMessage `json:"deployed_app_config,omitempty"`
}

// Deployment is one Serve deployment of an application (Ray's DeploymentDetails).
type Deployment struct {
	Name              string `json:"name"`
	Status            string `json:"status"`
	StatusTrigger     string `json:"status_trigger,omitempty"`
	Message           string `json:"message"`
	TargetNumReplicas int32  `json:"target_num_replicas"`
}
