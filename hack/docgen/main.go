// Command docgen writes the reference tables of docs/reference/ from their sources of truth
// (internal/docgen). Run it from the repository root: `make docs`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/raygate/raygate/internal/docgen"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	files, err := docgen.Generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		path := filepath.Join(*root, f.Path)
		if old, err := os.ReadFile(path); err == nil && string(old) == f.Content {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, []byte(f.Content), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", f.Path)
	}
}
