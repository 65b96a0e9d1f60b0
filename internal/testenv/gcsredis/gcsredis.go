// Package gcsredis is the external Redis of GCS fault tolerance for tests: a real
// Redis-protocol server (miniredis) on loopback, and a small client that does, over the
// wire, what Ray does with it: the GCS writes its tables under the cluster's storage
// namespace, and the cleanup Job deletes them.
package gcsredis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Server is a Redis server on 127.0.0.1.
type Server struct {
	*miniredis.Miniredis
}

// Start runs a server that requires password (none when empty).
func Start(password string) (*Server, error) {
	m := miniredis.NewMiniRedis()
	if password != "" {
		m.RequireAuth(password)
	}
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return &Server{m}, nil
}

// keyPrefix is how Ray's GCS names its keys in Redis: every table of a cluster lives under
// "RAY<namespace>@".
func keyPrefix(namespace string) string { return "RAY" + namespace + "@" }

// Conn is one client connection.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// Dial connects to address (host:port, or redis://host:port) and authenticates when
// username or password is set, as Ray does from REDIS_USERNAME and REDIS_PASSWORD.
func Dial(address, username, password string) (*Conn, error) {
	address = strings.TrimPrefix(strings.Split(address, ",")[0], "redis://")
	c, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return nil, err
	}
	conn := &Conn{c: c, r: bufio.NewReader(c)}
	if password != "" {
		args := []string{"AUTH", password}
		if username != "" {
			args = []string{"AUTH", username, password}
		}
		if _, err := conn.Do(args...); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return conn, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command and reads its reply: a string, an int64, nil, or a []any of those.
func (c *Conn) Do(args ...string) (any, error) {
	_ = c.c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.c, b.String()); err != nil {
		return nil, err
	}
	return c.reply()
}

func (c *Conn) reply() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.reply(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// WriteGCSTables writes a few GCS tables for namespace, as a running head does.
func (c *Conn) WriteGCSTables(namespace string) error {
	for _, table := range []string{"JOB", "NODE", "ACTOR", "KV"} {
		if _, err := c.Do("HSET", keyPrefix(namespace)+table, "k", "v"); err != nil {
			return err
		}
	}
	return nil
}

// Keys lists the keys of namespace.
func (c *Conn) Keys(namespace string) ([]string, error) {
	var keys []string
	cursor := "0"
	for {
		r, err := c.Do("SCAN", cursor, "MATCH", keyPrefix(namespace)+"*", "COUNT", "100")
		if err != nil {
			return nil, err
		}
		parts, ok := r.([]any)
		if !ok || len(parts) != 2 {
			return nil, fmt.Errorf("unexpected SCAN reply %v", r)
		}
		cursor, _ = parts[0].(string)
		batch, _ := parts[1].([]any)
		for _, k := range batch {
			if s, ok := k.(string); ok {
				keys = append(keys, s)
			}
		}
		if cursor == "0" {
			return keys, nil
		}
	}
}

// DeleteNamespace deletes every key of namespace, as Ray's cleanup_redis_storage does, and
// returns how many it deleted.
func (c *Conn) DeleteNamespace(namespace string) (int, error) {
	keys, err := c.Keys(namespace)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	r, err := c.Do(append([]string{"DEL"}, keys...)...)
	if err != nil {
		return 0, err
	}
	n, _ := r.(int64)
	return int(n), nil
}
