package console

// globMatch reports whether name matches pattern as Redis' SCAN MATCH
// reads it (the --match the console lists with): * any run of characters
// ('/' included), ? one character, [abc] [a-z] [^a] a class, \ quotes the
// next character. The console answers only for names it would list, so a
// name given in a request is held against the same glob.
func globMatch(pattern, name string) bool {
	p, s := []rune(pattern), []rune(name)
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(string(p[1:]), string(s[i:])) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			p, s = p[1:], s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			n, ok := matchClass(p[1:], s[0])
			if !ok {
				return false
			}
			p, s = p[1+n:], s[1:]
		default:
			if p[0] == '\\' && len(p) > 1 {
				p = p[1:]
			}
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return len(s) == 0
}

// matchClass matches c against the class that p starts (after its '['),
// and returns how many runes of p the class took, its ']' included.
func matchClass(p []rune, c rune) (int, bool) {
	i, not, match := 0, false, false
	if i < len(p) && p[i] == '^' {
		not, i = true, i+1
	}
	for ; i < len(p) && p[i] != ']'; i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			match = match || p[i] == c
		case i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			i += 2
		default:
			match = match || p[i] == c
		}
	}
	if i < len(p) {
		i++ // the ']'
	}
	return i, match != not
}
