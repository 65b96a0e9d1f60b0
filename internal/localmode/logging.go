package localmode

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// fileLogger is a console-format zap logger appending to path.
func fileLogger(path, level string) (logr.Logger, func(), error) {
	l, err := zapcore.ParseLevel(level)
	if err != nil {
		return logr.Discard(), nil, fmt.Errorf("log level %q: %w", level, err)
	}
	cfg := zap.NewDevelopmentConfig()
	cfg.Level = zap.NewAtomicLevelAt(l)
	cfg.OutputPaths = []string{path}
	cfg.ErrorOutputPaths = []string{path}
	cfg.DisableStacktrace = true
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	z, err := cfg.Build()
	if err != nil {
		return logr.Discard(), nil, err
	}
	return zapr.NewLogger(z), func() { _ = z.Sync() }, nil
}
