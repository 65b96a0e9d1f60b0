package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
)

func main() {
	files, _ := filepath.Glob(os.Args[1])
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			var job rayv1.RayJob
			if err := yaml.UnmarshalStrict([]byte(doc), &job); err != nil || job.Kind != "RayJob" {
				if err != nil && job.Kind == "RayJob" {
					fmt.Println(f, "decode:", err)
				}
				continue
			}
			job.Namespace = "default"
			defaulting.RayJob(&job)
			errs, warnings := validation.RayJob(&job, features.Default())
			fmt.Printf("%s %s: %d errors %d warnings\n", filepath.Base(f), job.Name, len(errs), len(warnings))
			for _, e := range errs {
				fmt.Println("   E", e)
			}
			for _, w := range warnings {
				fmt.Println("   W", w)
			}
		}
	}
}
