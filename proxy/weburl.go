package proxy

import (
	"net/netip"
	"strconv"
	"strings"
)

// webURL is what a browser makes of a URL string: the result of the WHATWG
// URL Standard's basic URL parser, reduced to what decides where a
// navigation goes (scheme, host, port) and what the gateway passes on
// (path, query, fragment, serialised as the parser does).
//
// Go's url.Parse follows RFC 3986, and browsers do not: they trim leading
// and trailing spaces and controls, delete tabs and newlines anywhere, read
// '\' as '/' in http(s) URLs, take "https:evil.example" as a host when the
// base is http, and "http:\\host" or "/\host" as one too. A redirect
// judged with url.Parse can leave the gateway in a browser; one judged
// with parseWebURL cannot.
type webURL struct {
	Scheme string // lower case
	// Host is lower case, an IPv4 address in dotted decimal and an IPv6
	// one in brackets, as browsers serialise them. A non-ASCII host is
	// kept as sent (percent-decoded): browsers map it with IDNA, which
	// this parser does not do, so it never equals an ASCII host here.
	Host string
	Port string // "" for the scheme's default port
	// Path is the serialised path ("/a/b"; for a scheme that is not
	// special, the rest of the URL after the scheme, unparsed).
	Path        string
	Query       string // without '?'
	HasQuery    bool
	Fragment    string // without '#'
	HasFragment bool
}

// specialPorts are the special schemes and their default ports.
var specialPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21", "file": ""}

// sameOrigin reports whether u and v are the same origin (scheme, host,
// port), as a browser decides where a request goes.
func (u *webURL) sameOrigin(v *webURL) bool {
	return u.Scheme == v.Scheme && u.Host == v.Host && u.Port == v.Port && u.Host != ""
}

// parseWebURL parses input against base (nil for none) as a browser's
// basic URL parser does, for http and https. Other special schemes (ws,
// wss, ftp, file) and every non-special scheme (javascript:, data:) are
// recognised but not parsed further: their Path holds the rest of the
// input. ok is false where the browser's parser fails (a navigation to it
// would not happen).
func parseWebURL(input string, base *webURL) (u webURL, ok bool) {
	// Leading and trailing C0 controls and spaces go; tabs and newlines
	// go wherever they are.
	input = strings.TrimFunc(input, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(input, "\t\n\r") {
		input = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, input)
	}
	scheme, rest, hasScheme := cutScheme(input)
	if !hasScheme {
		if base == nil || !isSpecialScheme(base.Scheme) {
			// A relative reference against an opaque base (or none).
			return u, false
		}
		u.Scheme = base.Scheme
		return parseRelative(u, input, base)
	}
	u.Scheme = scheme
	if !isSpecialScheme(scheme) || (scheme != "http" && scheme != "https") {
		u.Path = rest
		return u, true
	}
	if base != nil && base.Scheme == scheme {
		// "special relative or authority state": only "//" (not "\\")
		// makes this an authority; "http:foo" is relative to an http base.
		if strings.HasPrefix(rest, "//") {
			return parseAuthority(u, strings.TrimLeft(rest[2:], `/\`))
		}
		return parseRelative(u, rest, base)
	}
	// "special authority slashes" then "ignore slashes": any run of '/'
	// and '\', even none ("https:evil.example"), precedes the host.
	return parseAuthority(u, strings.TrimLeft(rest, `/\`))
}

// cutScheme splits "scheme:rest" when input starts with a scheme (an ASCII
// letter, then letters, digits, '+', '-', '.'), lower-casing it.
func cutScheme(input string) (scheme, rest string, ok bool) {
	if input == "" || !isASCIIAlpha(input[0]) {
		return "", input, false
	}
	for i := 1; i < len(input); i++ {
		c := input[i]
		switch {
		case c == ':':
			return strings.ToLower(input[:i]), input[i+1:], true
		case isASCIIAlpha(c) || ('0' <= c && c <= '9') || c == '+' || c == '-' || c == '.':
		default:
			return "", input, false
		}
	}
	return "", input, false
}

func isASCIIAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isSpecialScheme(s string) bool { _, ok := specialPorts[s]; return ok }

// parseRelative is the "relative state": rest is resolved against base,
// whose scheme u already has.
func parseRelative(u webURL, rest string, base *webURL) (webURL, bool) {
	if rest == "" {
		u.Host, u.Port, u.Path = base.Host, base.Port, base.Path
		u.Query, u.HasQuery = base.Query, base.HasQuery
		return u, base.Host != ""
	}
	if c := rest[0]; c == '/' || c == '\\' {
		// "relative slash state": a second slash of either kind starts
		// an authority.
		if after := rest[1:]; after != "" && (after[0] == '/' || after[0] == '\\') {
			return parseAuthority(u, strings.TrimLeft(after, `/\`))
		}
		u.Host, u.Port = base.Host, base.Port
		return parsePathQuery(u, nil, rest[1:])
	}
	u.Host, u.Port = base.Host, base.Port
	segs := pathSegments(base.Path)
	switch rest[0] {
	case '?', '#':
		if rest[0] == '#' {
			u.Query, u.HasQuery = base.Query, base.HasQuery
		}
		u.Path = base.Path
		return parseQueryFragment(u, rest)
	}
	if len(segs) > 0 {
		segs = segs[:len(segs)-1]
	}
	return parsePathQuery(u, segs, rest)
}

// pathSegments splits a serialised path ("/a/b/") into its list
// (["a", "b", ""]).
func pathSegments(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// parseAuthority is the "authority state" and "host state" for http(s):
// rest starts right after the slashes.
func parseAuthority(u webURL, rest string) (webURL, bool) {
	end := strings.IndexAny(rest, `/\?#`)
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		// Credentials: the host is what follows the last '@'.
		auth = auth[at+1:]
		if auth == "" {
			return u, false
		}
	}
	hostPart, port := auth, ""
	if i := lastColonOutsideBrackets(auth); i >= 0 {
		hostPart, port = auth[:i], auth[i+1:]
	}
	host, ok := parseHost(hostPart)
	if !ok {
		return u, false
	}
	if port != "" {
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return u, false
			}
		}
		digits := strings.TrimLeft(port, "0")
		if len(digits) > 5 {
			return u, false
		}
		n, _ := strconv.Atoi("0" + digits) // digits only, at most 5
		if n > 65535 {
			return u, false
		}
		port = strconv.Itoa(n)
		if port == specialPorts[u.Scheme] {
			port = ""
		}
	}
	u.Host, u.Port = host, port
	rest = rest[end:]
	if rest != "" && (rest[0] == '/' || rest[0] == '\\') {
		rest = rest[1:]
	}
	return parsePathQuery(u, nil, rest)
}

// lastColonOutsideBrackets finds the port separator of "host:port" and
// "[v6]:port".
func lastColonOutsideBrackets(s string) int {
	inside := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			inside = true
		case ']':
			inside = false
		case ':':
			if !inside {
				return i
			}
		}
	}
	return -1
}

// parseHost is the host parser for special schemes, without IDNA.
func parseHost(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	if s[0] == '[' {
		if s[len(s)-1] != ']' || strings.ContainsAny(s, "%") {
			return "", false
		}
		a, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !a.Is6() {
			return "", false
		}
		return "[" + a.String() + "]", true
	}
	d := percentDecode(s)
	ascii := true
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c >= 0x80 {
			ascii = false
			continue
		}
		// Forbidden domain code points.
		if c <= ' ' || c == 0x7f || strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0 {
			return "", false
		}
	}
	if !ascii {
		return d, true
	}
	d = strings.ToLower(d)
	if endsInNumber(d) {
		return parseIPv4(d)
	}
	return d, true
}

// percentDecode decodes every valid %XX and keeps the rest.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// endsInNumber is the URL Standard's "ends in a number checker": such a
// host is an IPv4 address or a failure, never a name.
func endsInNumber(s string) bool {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last)
	return ok
}

// ipv4Number parses one part of an IPv4 address as browsers do: "0x" hex,
// a leading "0" octal, else decimal.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		// Too large for 64 bits is still a number (and then too large).
		for i := 0; i < len(s); i++ {
			if !isHex(s[i]) || (base == 10 && s[i] > '9') || (base == 8 && s[i] > '7') {
				return 0, false
			}
		}
		return 1 << 40, true
	}
	return n, true
}

// parseIPv4 is the URL Standard's IPv4 parser; it serialises the address.
func parseIPv4(s string) (string, bool) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return "", false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	ip := last
	for i, n := range nums[:len(nums)-1] {
		ip += n << (8 * (3 - i))
	}
	// ip < 1<<32 here: each part was bounded above.
	var a [4]byte
	for i := range a {
		a[i] = byte(ip >> (24 - 8*i) & 0xff) //nolint:gosec // G115: masked to 8 bits
	}
	return netip.AddrFrom4(a).String(), true
}

// parsePathQuery is the "path state" for http(s) and what follows it: rest
// is the path (after its first slash), query and fragment; segs is the
// path list it continues (the base's, shortened, for a relative path).
func parsePathQuery(u webURL, segs []string, rest string) (webURL, bool) {
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	pieces := splitPath(rest[:end])
	for i, p := range pieces {
		last := i == len(pieces)-1 // ended by '?', '#' or the end, not a slash
		switch {
		case isDoubleDot(p):
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case isSingleDot(p):
			if last {
				segs = append(segs, "")
			}
		default:
			segs = append(segs, percentEncode(p, pathEncode))
		}
	}
	u.Path = "/" + strings.Join(segs, "/")
	return parseQueryFragment(u, rest[end:])
}

// splitPath splits a path on '/' and '\' (the same for http(s)).
func splitPath(p string) []string {
	var out []string
	for {
		i := strings.IndexAny(p, `/\`)
		if i < 0 {
			return append(out, p)
		}
		out = append(out, p[:i])
		p = p[i+1:]
	}
}

// parseQueryFragment parses "?query#fragment", "#fragment" or "".
func parseQueryFragment(u webURL, rest string) (webURL, bool) {
	if rest == "" {
		return u, true
	}
	if rest[0] == '?' {
		q := rest[1:]
		frag, hasFrag := "", false
		if i := strings.IndexByte(q, '#'); i >= 0 {
			q, frag, hasFrag = q[:i], q[i+1:], true
		}
		u.Query, u.HasQuery = percentEncode(q, queryEncode), true
		if hasFrag {
			u.Fragment, u.HasFragment = percentEncode(frag, fragmentEncode), true
		}
		return u, true
	}
	// rest[0] == '#'
	u.Fragment, u.HasFragment = percentEncode(rest[1:], fragmentEncode), true
	return u, true
}

func isSingleDot(s string) bool { return s == "." || strings.EqualFold(s, "%2e") }

func isDoubleDot(s string) bool {
	switch strings.ToLower(s) {
	case "..", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

// Percent-encode sets of the URL Standard, beyond C0 controls, DEL and
// non-ASCII bytes, which every set encodes.
const (
	queryEncode    = " \"#<>'"     // the special-query set
	pathEncode     = " \"#<>?^`{}" // the path set
	fragmentEncode = " \"<>`"      // the fragment set
)

// percentEncode encodes the bytes of s in set (and every byte below 0x20
// or above 0x7e); '%' itself is kept, as browsers keep it.
func percentEncode(s, set string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || strings.IndexByte(set, c) >= 0 {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || strings.IndexByte(set, c) >= 0 {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// String serialises u as a browser does (for http(s) URLs).
func (u *webURL) String() string {
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteByte(':')
	if u.Host != "" {
		b.WriteString("//")
		b.WriteString(u.Host)
		if u.Port != "" {
			b.WriteByte(':')
			b.WriteString(u.Port)
		}
	}
	b.WriteString(u.Path)
	if u.HasQuery {
		b.WriteByte('?')
		b.WriteString(u.Query)
	}
	if u.HasFragment {
		b.WriteByte('#')
		b.WriteString(u.Fragment)
	}
	return b.String()
}
