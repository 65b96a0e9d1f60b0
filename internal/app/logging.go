package app

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// parseLevel reads a log level: a zap level name, or a logr verbosity N > 0 (entries
// logged with V(N) and below), as KubeRay's --zap-log-level reads it.
func parseLevel(s string) (zapcore.Level, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n <= 127 {
		return zapcore.Level(-n), nil
	}
	var l zapcore.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level must be debug, info, warn or error (or a verbosity 1-127), not %q", s)
	}
	return l, nil
}

// validateLogging checks the logging options.
func (o *Options) validateLogging() []string {
	var errs []string
	for _, f := range []struct{ flag, v string }{{"--log-format", o.LogFormat}, {"--log-file-format", o.LogFileFormat}} {
		if f.v != "json" && f.v != "console" {
			errs = append(errs, fmt.Sprintf("%s must be json or console, not %q", f.flag, f.v))
		}
	}
	if _, err := parseLevel(o.LogLevel); err != nil {
		errs = append(errs, err.Error())
	}
	if o.LogStacktraceLevel != "" {
		var l zapcore.Level
		if err := l.UnmarshalText([]byte(o.LogStacktraceLevel)); err != nil {
			errs = append(errs, fmt.Sprintf("--log-stacktrace-level must be debug, info, warn, error or panic, not %q", o.LogStacktraceLevel))
		}
	}
	return errs
}

// NewLogger builds the structured logger (zap, through the logr interface) writing to
// standard error.
func NewLogger(level, format string) (logr.Logger, error) {
	log, _, err := newLogger(logSettings{level: level, format: format}, nil)
	return log, err
}

// Logger builds the logger the options ask for: standard error, and --log-file when set.
// Close the returned closer last: it flushes and closes the file.
func (o *Options) Logger() (logr.Logger, io.Closer, error) {
	return newLogger(logSettings{level: o.LogLevel, format: o.LogFormat, file: o.LogFile, fileFormat: o.LogFileFormat, stacktrace: o.LogStacktraceLevel}, nil)
}

// logSettings are the logging options.
type logSettings struct {
	level, format, stacktrace string
	// file, when set, is written as well, in fileFormat.
	file, fileFormat string
}

// newLogger builds the logger; stderr replaces standard error (tests).
func newLogger(s logSettings, stderr zapcore.WriteSyncer) (logr.Logger, io.Closer, error) {
	l, err := parseLevel(s.level)
	if err != nil {
		return logr.Discard(), nopCloser{}, err
	}
	cfg := zap.NewProductionConfig()
	if s.format == "console" {
		cfg = zap.NewDevelopmentConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(l)
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.DisableStacktrace = l > zapcore.DebugLevel
	var opts []zap.Option
	if s.stacktrace != "" {
		var at zapcore.Level
		if err := at.UnmarshalText([]byte(s.stacktrace)); err != nil {
			return logr.Discard(), nopCloser{}, err
		}
		cfg.DisableStacktrace = false
		opts = append(opts, zap.AddStacktrace(at))
	}
	// Standard error is zap's own output, unless a test replaces it.
	var extra []zapcore.Core
	if stderr != nil {
		extra = append(extra, zapcore.NewCore(encoder(s.format), stderr, cfg.Level))
		cfg.OutputPaths = []string{}
	}
	var closer io.Closer = nopCloser{}
	if s.file != "" {
		f, err := openRotatingFile(s.file, maxLogFileBytes, maxLogFileBackups)
		if err != nil {
			return logr.Discard(), nopCloser{}, fmt.Errorf("--log-file: %w", err)
		}
		closer = f
		extra = append(extra, zapcore.NewCore(encoder(s.fileFormat), f, cfg.Level))
	}
	replaced := stderr != nil
	opts = append(opts, zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		switch {
		case replaced:
			c = zapcore.NewTee(extra...)
		case len(extra) > 0:
			c = zapcore.NewTee(append([]zapcore.Core{c}, extra...)...)
		}
		return deferredFields{Core: c, base: c}
	}))
	z, err := cfg.Build(opts...)
	if err != nil {
		_ = closer.Close()
		return logr.Discard(), nopCloser{}, err
	}
	return zapr.NewLogger(z), syncCloser{z: z, c: closer}, nil
}

// encoder is the JSON or console encoder, with ISO 8601 times, as on standard error.
func encoder(format string) zapcore.Encoder {
	if format == "console" {
		c := zap.NewDevelopmentEncoderConfig()
		c.EncodeTime = zapcore.ISO8601TimeEncoder
		return zapcore.NewConsoleEncoder(c)
	}
	c := zap.NewProductionEncoderConfig()
	c.EncodeTime = zapcore.ISO8601TimeEncoder
	return zapcore.NewJSONEncoder(c)
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// syncCloser flushes the logger, then closes its file.
type syncCloser struct {
	z *zap.Logger
	c io.Closer
}

func (s syncCloser) Close() error {
	_ = s.z.Sync()
	return s.c.Close()
}

// deferredFields encodes a logger's fields (WithValues) only when it writes an entry.
// controller-runtime gives every reconcile a logger carrying the object and a reconcile ID,
// and zap encodes such fields at once, into a new buffer: at the default level most of those
// loggers never write, and the buffers were 3% of what raygate allocated while 1,000
// clusters came up. zapcore.NewLazyWith defers one With; this keeps a chain of them lazy
// too, by building every level from the base core with all fields so far.
type deferredFields struct {
	zapcore.Core // zapcore.NewLazyWith(base, fields), or base itself
	base         zapcore.Core
	fields       []zapcore.Field
}

func (d deferredFields) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return d
	}
	all := append(slices.Clip(d.fields), fields...)
	return deferredFields{Core: zapcore.NewLazyWith(d.base, all), base: d.base, fields: all}
}
