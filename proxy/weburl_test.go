package proxy

import "testing"

// TestParseWebURL checks the browser-like parser against what browsers
// do: cases from the URL Standard's web-platform tests (urltestdata.json)
// and the redirect tricks a hostile upstream would try.
func TestParseWebURL(t *testing.T) {
	t.Parallel()
	base, ok := parseWebURL("http://example.org/foo/bar", nil)
	if !ok {
		t.Fatal("base did not parse")
	}
	tests := []struct {
		in   string
		want string // "" for failure
	}{
		// urltestdata.json
		{"http://example\t.\norg", "http://example.org/"},
		{"http:foo.com", "http://example.org/foo/foo.com"},
		{"\t   :foo.com   \n", "http://example.org/foo/:foo.com"},
		{" foo.com  ", "http://example.org/foo/foo.com"},
		{"http://f:21/ b ? d # e ", "http://f:21/%20b%20?%20d%20#%20e"},
		{"http://f:00000000000000/c", "http://f:0/c"},
		{"http://f:00000000000000000000080/c", "http://f/c"},
		{"http://f:b/c", ""},
		{"http://f: /c", ""},
		{"http://f:999999/c", ""},
		{"http://[1::2]:3:4", ""},
		{"http:/example.com/", "http://example.org/example.com/"},
		{"https:/example.com/", "https://example.com/"},
		{"//foo//bar", "http://foo//bar"},
		{"http://example.com/foo/%2e%2", "http://example.com/foo/%2e%2"},
		{"http://example.com/foo/%2e./%2e%2e/.%2e/%2e.bar", "http://example.com/%2e.bar"},
		{"http://example.com////../..", "http://example.com//"},
		{"http://example.com/foo/bar//..", "http://example.com/foo/bar/"},
		{"http://example.com/foo/bar/..", "http://example.com/foo/"},
		{"http://www.google.com/foo?bar=baz# \u00bb", "http://www.google.com/foo?bar=baz#%20%C2%BB"},
		{"http://0x7F.1/", "http://127.0.0.1/"},
		{"http://4294967295", "http://255.255.255.255/"},
		{"http://0xffffffff1/", ""},
		{"http://256.256.256.256/", ""},
		{"http://1.2.3.4.5", ""},
		{"http://1.2.3.09", ""},
		{"http://foo.09", ""},
		{"http://foo.0x4", ""},
		{"http://10.0.0.5.:4040/", "http://10.0.0.5:4040/"},
		{"http://user:pass@foo:21/bar;par?b#c", "http://foo:21/bar;par?b#c"},
		{"http://@www.example.com", "http://www.example.com/"},
		{"http://@/www.example.com", ""},
		{"http://a b/", ""},
		{"http://a<b/", ""},
		{"http://[::1]:80/", "http://[::1]/"},
		{"http://EXAMPLE.com:80/", "http://example.com/"},
		{"http://ex%61mple.com/", "http://example.com/"},
		{"?x", "http://example.org/foo/bar?x"},
		{"#f", "http://example.org/foo/bar#f"},
		{"", "http://example.org/foo/bar"},
		{"..", "http://example.org/"},
		{"./x/../y", "http://example.org/foo/y"},
		{"/a\\b/./c", "http://example.org/a/b/c"},
		// What a hostile Location tries.
		{"https:evil.example", "https://evil.example/"},
		{"https:\\\\evil.example", "https://evil.example/"},
		{"http:\\\\evil.example/x", "http://evil.example/x"},
		{"http:/\\evil.example/x", "http://evil.example/x"},
		{"http:evil.example", "http://example.org/foo/evil.example"},
		{"//evil.example", "http://evil.example/"},
		{"///evil.example", "http://evil.example/"},
		{"/\\evil.example/x", "http://evil.example/x"},
		{"\\\\evil.example", "http://evil.example/"},
		{"\\/evil.example", "http://evil.example/"},
		{" \x00\x1f//evil.example \x7f", ""}, // a space in the host
		{"\x00\x1f //evil.example\x00", "http://evil.example/"},
		{"/\t/evil.example", "http://evil.example/"},
		{"/\n\\evil.example", "http://evil.example/"},
		{"h\ttt\np://evil.example", "http://evil.example/"},
		{"ht tp://evil.example", "http://example.org/foo/ht%20tp://evil.example"},
		{"HTTPS://Evil.Example:443/x", "https://evil.example/x"},
		{"http://10.0.0.5@evil.example/", "http://evil.example/"},
		{"http://evil.example\\@10.0.0.5/", "http://evil.example/@10.0.0.5/"},
	}
	for _, tt := range tests {
		got, ok := parseWebURL(tt.in, &base)
		switch {
		case tt.want == "" && ok:
			t.Errorf("parseWebURL(%q) = %q; want failure", tt.in, got.String())
		case tt.want != "" && !ok:
			t.Errorf("parseWebURL(%q) failed; want %q", tt.in, tt.want)
		case tt.want != "" && got.String() != tt.want:
			t.Errorf("parseWebURL(%q) = %q; want %q", tt.in, got.String(), tt.want)
		}
	}
	// Other schemes are recognised, not parsed.
	for _, in := range []string{"javascript:alert(1)", "java\tscript:alert(1)", " JavaScript:x", "data:text/html,x", "ws://h/", "file:///etc/passwd", "mailto:a@b"} {
		got, ok := parseWebURL(in, &base)
		if !ok || got.Scheme == "http" || got.Scheme == "https" {
			t.Errorf("parseWebURL(%q) = %+v, %v; want another scheme", in, got, ok)
		}
	}
}
