package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Notice is something the start of the operator logs once its logger exists: a KubeRay
// flag name used, a --config file read.
type Notice struct {
	Message       string
	KeysAndValues []any
}

// Resolve completes the options once fs has parsed the command line: it checks KubeRay's flag
// names and applies the --config file. A flag for a setting the file also sets, or two
// names of one setting, are errors. The notices are for the log.
func (o *Options) Resolve(fs *pflag.FlagSet) ([]Notice, error) {
	return o.resolve(fs, os.ReadFile)
}

func (o *Options) resolve(fs *pflag.FlagSet, readFile func(string) ([]byte, error)) ([]Notice, error) {
	notices, errs := o.kubeRayFlagNotices(fs)
	if o.ConfigFile != "" {
		n, err := o.applyConfigFile(fs, readFile)
		if err != nil {
			errs = append(errs, err.Error())
		}
		notices = append(notices, n...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid options: %s", strings.Join(errs, "; "))
	}
	return notices, nil
}

// applyConfigFile sets the options the --config file's fields set.
func (o *Options) applyConfigFile(fs *pflag.FlagSet, readFile func(string) ([]byte, error)) ([]Notice, error) {
	data, err := readFile(o.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	c, err := decodeConfiguration(data)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", o.ConfigFile, err)
	}
	var conflicts, applied []string
	for _, f := range c.fields() {
		if !f.set {
			continue
		}
		for _, flag := range f.flags {
			if fs.Changed(flag) {
				conflicts = append(conflicts, fmt.Sprintf("--%s and the file's %s", flag, f.name))
			}
		}
		f.apply(o)
		applied = append(applied, f.name)
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("--config %s sets what flags set too (%s): KubeRay would ignore the flags, raygate does not guess; set each in one place", o.ConfigFile, strings.Join(conflicts, ", "))
	}
	return []Notice{{Message: "read the KubeRay operator configuration", KeysAndValues: []any{"file", o.ConfigFile, "fields", applied}}}, nil
}
