package auth

import (
	"net/url"
	"strings"
	"testing"
)

func TestSafeRedirect(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"/", true},
		{"/app/app-1/jobs/", true},
		{"/app/app-1/stages/stage/?id=3&attempt=0", true},
		{"/history/app-1/1/jobs/?a=%2F%2Fx", true}, // encoded slashes in the query are data
		{"/a%20b", false},  // encoded whitespace is refused on every layer
		{"/a#frag", false}, // browsers send no fragment; net/http's Redirect cleaned one into the path
		{"/#/../\\evil.example", false},
		{"/app/x#/../../\\evil.example/p", false},
		{"/#/../%5Cevil.example", false},
		{"/?q=a\\b", false},
		{"", false},
		{"//evil.example", false},
		{"//evil.example/path", false},
		{"///evil.example", false},
		{"/\\evil.example", false},
		{"\\\\evil.example", false},
		{"/a\\b", false},
		{"/a%5Cb", false},
		{"/%5Cevil.example", false},
		{"https://evil.example", false},
		{"http:/evil.example", false},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{"/%2F%2Fevil.example", false},
		{"/%2f%2fevil.example", false},
		{"%2F%2Fevil.example", false},
		{"/%252F%252Fevil.example", false},
		{"/%25252F%25252Fevil.example", false},
		{"/%09/evil.example", false},
		{"/\t/evil.example", false},
		{"/%0a/evil.example", false},
		{"/%0D%0ALocation:%20x", false},
		{"/\r\nSet-Cookie: x", false},
		{" /a", false},
		{"/a b", false},
		{"/%00", false},
		{"/\x00", false},
		{"/\x7f", false},
		{"/caf\u00e9", false},
		{"/..//evil.example", false},
		{"/a/../../b", false},
		{"/%2e%2e/x", false},
		{"evil.example", false},
		{"a/b", false},
		{"?x=1", false},
		{"/%zz", false},
		{"/" + strings.Repeat("a", maxRedirectLen), false},
	}
	for _, tc := range tests {
		got, ok := safeRedirect(tc.in)
		if ok != tc.ok {
			t.Errorf("safeRedirect(%q) = %q, %v; want ok %v", tc.in, got, ok, tc.ok)
		}
		if ok && got != tc.in {
			t.Errorf("safeRedirect(%q) = %q; want the input unchanged", tc.in, got)
		}
	}
}

func FuzzSafeRedirect(f *testing.F) {
	for _, s := range []string{"/", "/a?b=c", "//evil", "/\\evil", "/%2F%2Fevil", "/%09/x", "https://x", "javascript:x", "/%5C", "/..//x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := safeRedirect(s)
		if !ok {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("safeRedirect(%q) accepted a value url.Parse refuses: %v", s, err)
		}
		if u.Scheme != "" || u.Host != "" || u.User != nil {
			t.Fatalf("safeRedirect(%q) = %q with scheme %q host %q", s, got, u.Scheme, u.Host)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") {
			t.Fatalf("safeRedirect(%q) = %q; want a single leading slash", s, got)
		}
		// What a browser sees after dropping tabs/newlines and reading "\" as
		// "/" must still be same-origin, on every decoding layer.
		p := u.EscapedPath()
		for range 4 {
			norm := strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(p)
			if strings.HasPrefix(norm, "//") {
				t.Fatalf("safeRedirect(%q) = %q normalises to %q", s, got, norm)
			}
			d, err := url.PathUnescape(p)
			if err != nil || d == p {
				break
			}
			p = d
		}
	})
}
