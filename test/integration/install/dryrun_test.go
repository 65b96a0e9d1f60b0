package install

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// dryRun applies manifests with a server-side dry-run (server-side apply: the CRDs are too
// large for client-side apply's last-applied annotation) and returns what kubectl printed,
// one line per object.
//
// The chart's CRDs are the same bytes whatever the values (Helm does not template crds/),
// and each is megabytes the API server takes seconds to dry-run: a CRD it already accepted
// unchanged in this run is not sent again, and its line from then stands in for it.
func dryRun(ctx context.Context, manifests string) string {
	GinkgoHelper()
	var send []string
	var known []string
	fresh := map[string]string{} // line prefix kubectl prints for a CRD sent now -> its key
	for _, doc := range documents(manifests) {
		objs := parse(doc)
		if len(objs) == 0 {
			continue
		}
		if len(objs) == 1 && objs[0].GetKind() == "CustomResourceDefinition" {
			canonical, err := json.Marshal(objs[0].Object) // map keys sorted: formatting aside
			Expect(err).NotTo(HaveOccurred())
			sum := sha256.Sum256(canonical)
			key := string(sum[:])
			if line, ok := acceptedCRDs.get(key); ok {
				known = append(known, line)
				continue
			}
			fresh["customresourcedefinition.apiextensions.k8s.io/"+objs[0].GetName()+" "] = key
		}
		send = append(send, doc)
	}
	GinkgoWriter.Printf("server-side dry-run: %d objects sent, %d CRDs accepted unchanged earlier\n", len(send), len(known))
	out := ""
	if len(send) > 0 {
		var stderr string
		var err error
		out, stderr, err = env.Kubectl(ctx, strings.Join(send, "\n---\n"), "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		for prefix, key := range fresh {
			if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, "(server dry run)") {
				acceptedCRDs.put(key, line)
			}
		}
	}
	for _, line := range known {
		out += line + "\n"
	}
	return out
}

// acceptedCRDs are kubectl's lines for the CRDs the API server accepted in a dry-run, by
// content.
var acceptedCRDs = lineCache{lines: map[string]string{}}

type lineCache struct {
	mu    sync.Mutex
	lines map[string]string
}

func (c *lineCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lines[key]
	return l, ok
}

func (c *lineCache) put(key, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines[key] = line
}

// documents splits a multi-document YAML stream into its documents, as written.
func documents(manifests string) []string {
	GinkgoHelper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifests)))
	var docs []string
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		Expect(err).NotTo(HaveOccurred())
		docs = append(docs, string(doc))
	}
}
