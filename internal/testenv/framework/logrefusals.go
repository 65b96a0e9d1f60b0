package framework

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LogRefusals finds refusals of an operator process (cmd/raygate running as a
// ServiceAccount) in its logs: the API server's 403 message names the user ("... is
// forbidden: User "system:serviceaccount:..." cannot ..."), and the operator logs every
// failed request it cares about. Use it where the transport cannot see the requests.
type LogRefusals struct {
	// Dir holds the logs (every file in it is read).
	Dir string
	// ServiceAccount is the process's identity.
	ServiceAccount ServiceAccount
	// read is how far each file was read.
	read map[string]int64
}

// maxLogLine bounds one log line read.
const maxLogLine = 1 << 20

// New returns the lines naming a refusal written since the last call.
func (l *LogRefusals) New() ([]string, error) {
	if l.read == nil {
		l.read = map[string]int64{}
	}
	files, err := filepath.Glob(filepath.Join(l.Dir, "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	user := l.ServiceAccount.User()
	var out []string
	for _, path := range files {
		lines, end, err := linesFrom(path, l.read[path])
		if err != nil {
			return nil, err
		}
		l.read[path] = end
		for _, line := range lines {
			if strings.Contains(line, "forbidden") && strings.Contains(line, user) {
				out = append(out, filepath.Base(path)+": "+line)
			}
		}
	}
	return out, nil
}

// linesFrom reads the complete lines of a file from offset on and returns where they end.
func linesFrom(path string, offset int64) ([]string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err != nil { // a partial last line is read again next time
			return lines, offset, nil
		}
		offset += int64(len(line))
		if len(line) > maxLogLine {
			line = line[:maxLogLine]
		}
		lines = append(lines, strings.TrimSuffix(line, "\n"))
	}
}
