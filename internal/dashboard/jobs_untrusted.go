package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode"
	"unicode/utf8"
)

// wireJob is a job's details as they come off the wire. The parts whose size the head
// chooses (metadata, runtime_env) stay raw until bound decodes what is kept of them.
type wireJob struct {
	Type           string          `json:"type"`
	JobID          string          `json:"job_id"`
	SubmissionID   string          `json:"submission_id"`
	Status         string          `json:"status"`
	Entrypoint     string          `json:"entrypoint"`
	Message        string          `json:"message"`
	ErrorType      string          `json:"error_type"`
	StartTime      json.Number     `json:"start_time"`
	EndTime        json.Number     `json:"end_time"`
	Metadata       json.RawMessage `json:"metadata"`
	RuntimeEnv     json.RawMessage `json:"runtime_env"`
	DriverExitCode json.Number     `json:"driver_exit_code"`
}

// bound turns a decoded answer into a JobInfo: statuses mapped (ParseJobStatus), text
// sanitized and cut, times and exit codes range-checked, metadata and runtime_env bounded.
func (w *wireJob) bound() JobInfo {
	status, known := ParseJobStatus(w.Status)
	info := JobInfo{
		Type:         Sanitize(w.Type, 16),
		JobID:        Sanitize(w.JobID, 64),
		SubmissionID: Sanitize(w.SubmissionID, maxJobID),
		Status:       status,
		Entrypoint:   Sanitize(w.Entrypoint, maxEntrypoint),
		Message:      Sanitize(w.Message, maxJobMessage),
		ErrorType:    Sanitize(w.ErrorType, 64),
		StartTime:    millis(w.StartTime),
		EndTime:      millis(w.EndTime),
		Metadata:     boundedStringMap(w.Metadata, MaxJobMetadata),
	}
	if !known {
		info.UnknownStatus = Sanitize(w.Status, 32)
		if info.UnknownStatus == "" {
			info.UnknownStatus = `""`
		}
	}
	if len(w.RuntimeEnv) <= MaxJobRuntimeEnvBytes && isJSONObject(w.RuntimeEnv) {
		info.RuntimeEnv = append(json.RawMessage(nil), bytes.TrimSpace(w.RuntimeEnv)...)
	}
	if code, err := w.DriverExitCode.Int64(); err == nil && code >= math.MinInt32 && code <= math.MaxInt32 {
		c := int32(code)
		info.DriverExitCode = &c
	}
	return info
}

// maxMillis is the latest time accepted, the year 9999: anything later is not a clock.
const maxMillis = 253402300799999

// millis reads a time in milliseconds since the epoch; anything that is not a non-negative
// number up to maxMillis is 0 (unknown).
func millis(n json.Number) uint64 {
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > maxMillis {
		return 0
	}
	return uint64(f)
}

// boundedStringMap decodes a JSON object of strings, keeping at most limit entries (in the
// answer's order) with sanitized keys and values and reading no further: a dense object of
// a million tiny entries costs no more than one of limit entries. Entries whose value is not
// a string are skipped; anything that is not an object gives nil.
func boundedStringMap(raw json.RawMessage, limit int) map[string]string {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	out := map[string]string{}
	for len(out) < limit && dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		var s string
		if json.Unmarshal(v, &s) != nil || key == "" {
			continue
		}
		if k := Sanitize(key, maxName); k == key {
			out[k] = Sanitize(s, maxMetadataValue)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// decodeJobList decodes a JSON array of job details one element at a time, keeping the
// first limit and reading no further.
func decodeJobList(data []byte, limit int) ([]JobInfo, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, errors.New("not a JSON array")
	}
	jobs := []JobInfo{}
	for len(jobs) < limit && dec.More() {
		var w wireJob
		if err := dec.Decode(&w); err != nil {
			return nil, errors.New("invalid JSON")
		}
		jobs = append(jobs, w.bound())
	}
	return jobs, nil
}

// readAtMost reads up to n bytes of r.
func readAtMost(r io.Reader, n int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, n))
}

// readLogsTail reads Ray's logs answer, {"logs": "<text>"}, as a stream: at most maxRead
// bytes of r, keeping only the last keep bytes of the text (with sanitizeLog applied).
// Other members of the object are skipped; a null or missing "logs" is an empty log.
func readLogsTail(r io.Reader, maxRead int64, keep int) (tail string, truncated bool, err error) {
	s := &jsonStream{r: io.LimitReader(r, maxRead+1), max: maxRead}
	if err := s.expect('{'); err != nil {
		return "", false, err
	}
	var text []byte
	c, err := s.nextNonSpace()
	for err == nil && c != '}' {
		if c != '"' {
			return "", false, s.syntax()
		}
		key := &ring{keep: 16}
		if err := s.readString(key); err != nil {
			return "", false, err
		}
		if err := s.expect(':'); err != nil {
			return "", false, err
		}
		if c, err = s.nextNonSpace(); err != nil {
			return "", false, err
		}
		if name := string(key.bytes()); name == "logs" && !key.dropped && c == '"' {
			tr := &ring{keep: keep}
			if err := s.readString(tr); err != nil {
				return "", false, err
			}
			text, truncated = tr.bytes(), tr.dropped
		} else if err := s.skipValue(c, 0); err != nil {
			return "", false, err
		}
		if c, err = s.nextNonSpace(); err != nil || c == '}' {
			break
		}
		if c != ',' {
			return "", false, s.syntax()
		}
		c, err = s.nextNonSpace()
	}
	if err != nil {
		return "", false, err
	}
	return sanitizeLog(text, truncated), truncated, nil
}

// sanitizeLog makes a log excerpt safe to show: valid UTF-8 (a rune cut by the excerpt's
// start is dropped, invalid bytes become '?'), line breaks and tabs kept, every other
// control or unprintable character removed.
func sanitizeLog(b []byte, cutAtStart bool) string {
	if cutAtStart {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			out = append(out, '?')
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case !unicode.IsPrint(r):
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out)
}

// ring keeps the last keep bytes written to it.
type ring struct {
	keep    int
	buf     []byte
	dropped bool
}

func (r *ring) write(b ...byte) {
	r.buf = append(r.buf, b...)
	if len(r.buf) > 2*r.keep {
		r.compact()
	}
}

func (r *ring) compact() {
	if n := len(r.buf) - r.keep; n > 0 {
		r.buf = append(r.buf[:0], r.buf[n:]...)
		r.dropped = true
	}
}

func (r *ring) bytes() []byte {
	r.compact()
	return r.buf
}

// jsonStream reads JSON a byte at a time from a bounded reader, for answers too large to
// hold.
type jsonStream struct {
	r    io.Reader
	max  int64
	read int64
	buf  []byte
	pos  int
}

func (s *jsonStream) next() (byte, error) {
	if s.pos == len(s.buf) {
		if s.buf == nil {
			s.buf = make([]byte, 32<<10)
		}
		n, err := s.r.Read(s.buf[:cap(s.buf)])
		s.read += int64(n)
		if s.read > s.max {
			return 0, fmt.Errorf("the answer is longer than the %d bytes raygate reads", s.max)
		}
		if n == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			if errors.Is(err, io.EOF) {
				return 0, errors.New("the answer ends in the middle of its JSON")
			}
			return 0, fmt.Errorf("reading the answer failed: %w", err)
		}
		s.buf, s.pos = s.buf[:n], 0
	}
	c := s.buf[s.pos]
	s.pos++
	return c, nil
}

func (s *jsonStream) nextNonSpace() (byte, error) {
	for {
		c, err := s.next()
		if err != nil || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return c, err
		}
	}
}

func (s *jsonStream) expect(want byte) error {
	c, err := s.nextNonSpace()
	if err != nil {
		return err
	}
	if c != want {
		return s.syntax()
	}
	return nil
}

func (s *jsonStream) syntax() error { return errors.New("the answer is not the JSON expected") }

// readString reads the rest of a string whose opening quote was read, decoding escapes
// into w.
func (s *jsonStream) readString(w *ring) error {
	for {
		// Copy the run of plain bytes already buffered in one go: a log of megabytes is
		// read at the speed of copying it.
		if run := plainRun(s.buf[s.pos:]); run > 0 {
			w.write(s.buf[s.pos : s.pos+run]...)
			s.pos += run
		}
		c, err := s.next()
		if err != nil {
			return err
		}
		switch {
		case c == '"':
			return nil
		case c == '\\':
			if err := s.readEscape(w); err != nil {
				return err
			}
		case c < 0x20:
			return s.syntax()
		default:
			w.write(c)
		}
	}
}

// plainRun is how many bytes at the start of b need no decoding: up to a quote, a
// backslash or a control character.
func plainRun(b []byte) int {
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return len(b)
}

func (s *jsonStream) readEscape(w *ring) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	switch c {
	case '"', '\\', '/':
		w.write(c)
	case 'b', 'f', 'r':
		// control characters: dropped by sanitizeLog anyway
	case 'n':
		w.write('\n')
	case 't':
		w.write('\t')
	case 'u':
		r, err := s.readHex4()
		if err != nil {
			return err
		}
		if utf16IsHighSurrogate(r) {
			// A pair \uD8xx\uDCxx is one rune; a lone half is invalid and becomes '?'.
			if c, err := s.next(); err != nil || c != '\\' {
				return s.orSyntax(err)
			}
			if c, err := s.next(); err != nil || c != 'u' {
				return s.orSyntax(err)
			}
			lo, err := s.readHex4()
			if err != nil {
				return err
			}
			r = combineSurrogates(r, lo)
		}
		if r >= 0xD800 && r <= 0xDFFF {
			r = '?'
		}
		var b [utf8.UTFMax]byte
		w.write(b[:utf8.EncodeRune(b[:], r)]...)
	default:
		return s.syntax()
	}
	return nil
}

func (s *jsonStream) orSyntax(err error) error {
	if err != nil {
		return err
	}
	return s.syntax()
}

func (s *jsonStream) readHex4() (rune, error) {
	var r rune
	for range 4 {
		c, err := s.next()
		if err != nil {
			return 0, err
		}
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, s.syntax()
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}

func utf16IsHighSurrogate(r rune) bool { return r >= 0xD800 && r < 0xDC00 }

func combineSurrogates(hi, lo rune) rune {
	if lo < 0xDC00 || lo > 0xDFFF {
		return '?'
	}
	return (hi-0xD800)<<10 | (lo - 0xDC00) + 0x10000
}

// maxSkipDepth bounds the nesting of a skipped value.
const maxSkipDepth = 64

// skipValue reads past a value whose first byte is c.
func (s *jsonStream) skipValue(c byte, depth int) error {
	if depth > maxSkipDepth {
		return errors.New("the answer nests deeper than raygate reads")
	}
	switch c {
	case '"':
		return s.readString(&ring{keep: 0})
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		for {
			c, err := s.nextNonSpace()
			if err != nil {
				return err
			}
			switch c {
			case end:
				return nil
			case ',', ':':
				continue
			}
			if err := s.skipValue(c, depth+1); err != nil {
				return err
			}
		}
	default:
		// A number or a literal: up to the next delimiter, which is pushed back.
		for {
			d, err := s.next()
			if err != nil {
				return err
			}
			if d == ',' || d == '}' || d == ']' || d == ' ' || d == '\n' || d == '\t' || d == '\r' {
				s.pos--
				return nil
			}
		}
	}
}
