package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
)

// identityHeaders are request headers through which a client could claim an
// identity or a network origin to Spark (whose filters or a proxy in front of
// it may trust them). The gateway sets its own after stripping these.
var identityHeaders = []string{
	"Forwarded",
	"X-Real-Ip",
	"X-Remote-User",
	"Remote-User",
	"X-Forwarded-User",
	"X-Forwarded-Email",
	"X-Forwarded-Groups",
	"X-Forwarded-Preferred-Username",
	"Authorization",
	"Proxy-Authorization",
	"X-Client-Ip",
	"True-Client-Ip",
	"Cf-Connecting-Ip",
	// Spark honours none of these, but a filter or proxy in front of it
	// might turn a GET the guard let through into something else.
	"X-Http-Method-Override",
	"X-Http-Method",
	"X-Method-Override",
}

// StripRequest removes from an outbound request everything the client must
// not pass to Spark: identity and forwarding headers (every X-Forwarded-*,
// Forwarded, X-Real-IP, X-Remote-User, Remote-User, every X-Auth-Request-*,
// X-Client-IP, True-Client-IP, CF-Connecting-IP, the method-override headers,
// Authorization, Proxy-Authorization, and any header named in Connection),
// every cookie (the gateway's own and any other: Spark uses none),
// and the doAs query parameter in any case. It mutates h and returns the
// cleaned RawQuery; the rest of the query is kept byte for byte.
func StripRequest(h http.Header, rawQuery string) (cleanQuery string) {
	// Hop-by-hop headers named in Connection go first: a client could list
	// X-Forwarded-For there to smuggle it past a later stage.
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	// One pass over the header (a handful of keys) rather than a Del per
	// name of identityHeaders, each canonicalizing its name.
	for name := range h {
		if strippedHeaders[name] || hasPrefixFold(name, "X-FORWARDED") || hasPrefixFold(name, "X-AUTH-REQUEST") {
			delete(h, name)
		}
	}
	return stripDoAs(rawQuery)
}

// strippedHeaders holds, canonical, the names StripRequest removes besides
// X-Forwarded-* and X-Auth-Request-*: identityHeaders, Connection, and
// Cookie. Every cookie stays here: Spark's UI uses none; what a browser
// sends to the gateway's host is the gateway's session, or belongs to
// other sites on that host (an IdP, other apps), and must not reach every
// driver.
var strippedHeaders = func() map[string]bool {
	m := map[string]bool{"Connection": true, "Cookie": true}
	for _, name := range identityHeaders {
		m[textproto.CanonicalMIMEHeaderKey(name)] = true
	}
	return m
}()

// stripDoAs removes every doAs parameter (any case, also percent-encoded
// spellings of the name) from a raw query, keeping the other pairs as sent.
// Both '&' and ';' count as separators (older servlet containers split on
// ';').
func stripDoAs(rawQuery string) string {
	if rawQuery == "" || !mayHaveDoAs(rawQuery) {
		return rawQuery
	}
	return stripDoAsAll(rawQuery)
}

// stripDoAsAll is stripDoAs without the pre-check.
func stripDoAsAll(rawQuery string) string {
	parts := strings.Split(rawQuery, "&")
	kept := parts[:0]
	for _, p := range parts {
		if strings.Contains(p, ";") {
			subs := strings.Split(p, ";")
			keptSubs := subs[:0]
			for _, sub := range subs {
				if key, _, _ := strings.Cut(sub, "="); !isDoAs(key) {
					keptSubs = append(keptSubs, sub)
				}
			}
			if len(keptSubs) == 0 {
				continue
			}
			p = strings.Join(keptSubs, ";")
		} else if key, _, _ := strings.Cut(p, "="); isDoAs(key) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}

func isDoAs(rawKey string) bool {
	key := rawKey
	if strings.ContainsAny(key, "%+") {
		var b strings.Builder
		for i := 0; i < len(key); i++ {
			c := key[i]
			switch {
			case c == '+':
				c = ' '
			case c == '%' && i+2 < len(key) && isHex(key[i+1]) && isHex(key[i+2]):
				c = unhex(key[i+1])<<4 | unhex(key[i+2])
				i += 2
			}
			b.WriteByte(c)
		}
		key = b.String()
	}
	return strings.EqualFold(strings.TrimSpace(key), "doas")
}

// mayHaveDoAs is a sound pre-check for stripDoAs: a doAs key spells "doas"
// in ASCII letters unless it is percent-encoded or uses a non-ASCII letter
// that strings.EqualFold folds to one (U+017F, the long s).
func mayHaveDoAs(rawQuery string) bool {
	for i := 0; i < len(rawQuery); i++ {
		if c := rawQuery[i]; c == '%' || c >= 0x80 {
			return true
		}
	}
	return asciiIndexFold(rawQuery, "doas") >= 0
}

// hasPrefixFold reports whether s starts with the upper-case ASCII prefix,
// in any ASCII case (strings.ToUpper then HasPrefix, without allocating).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// asciiIndexFold returns the index of the lower-case ASCII word w in s, in
// any ASCII case, or -1.
func asciiIndexFold(s, w string) int {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return i
		}
	}
	return -1
}
