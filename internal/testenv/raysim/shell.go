package raysim

import (
	"errors"
	"regexp"
	"strings"
)

// A small reading of POSIX shell, enough for the scripts KubeRay writes into a submitter
// container (`/bin/bash -ce -- "<script>"`) and the `ray job submit` lines users write in
// their own submitter templates: words with single and double quotes and backslashes,
// $VAR and ${VAR} from the container's environment, commands separated by ; && || | and
// new lines, and redirections, which are dropped. Expansions are not split into words
// and nothing else (globs, subshells, command substitution) is interpreted.

// shellCommand is one simple command: its words, after the reserved words that open or
// close a compound command (if, then, until, do, !, ...) were taken off its front.
type shellCommand struct {
	words []string
	// keywords are the reserved words that preceded it, e.g. ["if", "!"].
	keywords []string
}

// reservedWords open or close compound commands; found first in a command, they are
// noted and skipped.
var reservedWords = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "fi": true, "until": true, "while": true, "do": true, "done": true, "!": true, "{": true, "}": true}

// parseShell splits script into simple commands.
func parseShell(script string, env map[string]string) ([]shellCommand, error) {
	p := &shellParser{in: script, env: env}
	return p.parse()
}

type shellParser struct {
	in   string
	pos  int
	env  map[string]string
	cmds []shellCommand
	// the command being read
	words     []string
	word      strings.Builder
	inWord    bool
	redirSkip bool // a redirection operator was read; its target is the next word
}

func (p *shellParser) parse() ([]shellCommand, error) {
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == ' ' || c == '\t':
			p.endWord()
			p.pos++
		case c == '\n' || c == ';' || c == '|' || c == '&':
			p.endWord()
			p.endCommand()
			p.pos++
			// && and || separate commands as ; does here; a lone & ends one too.
			if p.pos < len(p.in) && (p.in[p.pos] == '&' || p.in[p.pos] == '|') && (c == '&' || c == '|') {
				p.pos++
			}
		case c == '#' && !p.inWord:
			for p.pos < len(p.in) && p.in[p.pos] != '\n' {
				p.pos++
			}
		case c == '>' || c == '<':
			p.redirection()
		case c == '\'':
			end := strings.IndexByte(p.in[p.pos+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			p.add(p.in[p.pos+1 : p.pos+1+end])
			p.pos += end + 2
		case c == '"':
			if err := p.doubleQuoted(); err != nil {
				return nil, err
			}
		case c == '\\':
			p.pos++
			if p.pos < len(p.in) {
				if p.in[p.pos] != '\n' { // backslash-newline continues the line
					p.add(p.in[p.pos : p.pos+1])
				}
				p.pos++
			}
		case c == '$':
			p.add(p.expand())
		default:
			p.add(p.in[p.pos : p.pos+1])
			p.pos++
		}
	}
	p.endWord()
	p.endCommand()
	return p.cmds, nil
}

// add appends text to the current word.
func (p *shellParser) add(s string) {
	p.word.WriteString(s)
	p.inWord = true
}

// redirection reads an operator (>, >>, <, >&, 2>&1, ...): an all-digit word before it is
// its file descriptor, and the word after it (or &N) its target; all are dropped.
func (p *shellParser) redirection() {
	if p.inWord && strings.Trim(p.word.String(), "0123456789") == "" {
		p.word.Reset()
		p.inWord = false
	} else {
		p.endWord()
	}
	p.pos++
	for p.pos < len(p.in) && (p.in[p.pos] == '>' || p.in[p.pos] == '|') {
		p.pos++
	}
	if p.pos < len(p.in) && p.in[p.pos] == '&' {
		p.pos++
		for p.pos < len(p.in) && (p.in[p.pos] >= '0' && p.in[p.pos] <= '9' || p.in[p.pos] == '-') {
			p.pos++
		}
		return
	}
	p.redirSkip = true
}

func (p *shellParser) doubleQuoted() error {
	p.pos++
	p.inWord = true
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch c {
		case '"':
			p.pos++
			return nil
		case '\\':
			if p.pos+1 < len(p.in) && strings.IndexByte("\"\\$`\n", p.in[p.pos+1]) >= 0 {
				if p.in[p.pos+1] != '\n' {
					p.add(p.in[p.pos+1 : p.pos+2])
				}
				p.pos += 2
				continue
			}
			p.add(`\`)
			p.pos++
		case '$':
			p.add(p.expand())
		default:
			p.add(p.in[p.pos : p.pos+1])
			p.pos++
		}
	}
	return errors.New("unterminated double quote")
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// expand reads $NAME or ${NAME} at pos and returns its value ("" when unset); a $ that
// starts neither is kept.
func (p *shellParser) expand() string {
	rest := p.in[p.pos+1:]
	if strings.HasPrefix(rest, "{") {
		if end := strings.IndexByte(rest, '}'); end > 0 {
			name := rest[1:end]
			if def := strings.Index(name, ":-"); def >= 0 { // ${NAME:-default}
				p.pos += end + 2
				if v := p.env[name[:def]]; v != "" {
					return v
				}
				return name[def+2:]
			}
			p.pos += end + 2
			return p.env[name]
		}
	}
	if name := varName.FindString(rest); name != "" {
		p.pos += 1 + len(name)
		return p.env[name]
	}
	p.pos++
	return "$"
}

func (p *shellParser) endWord() {
	if !p.inWord {
		return
	}
	w := p.word.String()
	p.word.Reset()
	p.inWord = false
	if p.redirSkip {
		p.redirSkip = false
		return
	}
	p.words = append(p.words, w)
}

func (p *shellParser) endCommand() {
	p.redirSkip = false
	words := p.words
	p.words = nil
	var kw []string
	for len(words) > 0 && reservedWords[words[0]] {
		kw = append(kw, words[0])
		words = words[1:]
	}
	if len(words) > 0 || len(kw) > 0 {
		p.cmds = append(p.cmds, shellCommand{words: words, keywords: kw})
	}
}

// ExpandKubeletRefs expands $(NAME) references as the kubelet does in a container's
// command, args and env values: defined variables are replaced, $$ is a literal $,
// anything else is kept.
func ExpandKubeletRefs(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte('$')
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

var shlexSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shlexJoin joins words into one command line as Python's shlex.join does, which is how
// `ray job submit` turns its entrypoint words back into the entrypoint string.
func shlexJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		switch {
		case w == "":
			out[i] = "''"
		case shlexSafe.MatchString(w):
			out[i] = w
		default:
			out[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
		}
	}
	return strings.Join(out, " ")
}
