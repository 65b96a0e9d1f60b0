package rayspec

// DefaultServeAppName is the name Ray Serve gives an application whose config has no name.
const DefaultServeAppName = "default"

// ServeAppName is the name Ray Serve runs an application under, given the name its config
// states ("" when the config has none): admission's duplicate check and the RayService
// controller's status keys must both use it, or an unnamed application would be checked
// under one name and reported under another.
func ServeAppName(stated string) string {
	if stated == "" {
		return DefaultServeAppName
	}
	return stated
}
