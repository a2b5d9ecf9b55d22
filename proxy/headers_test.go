package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStripRequestHeaders(t *testing.T) {
	t.Parallel()
	forged := http.Header{}
	for _, name := range []string{
		"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
		"X-Forwarded-Context", "X-Forwarded-Prefix", "X-Forwarded-User", "X-Forwarded-Email",
		"X-Forwarded-Groups", "X-Forwarded-Preferred-Username", "X-Forwarded-Access-Token",
		"Forwarded", "X-Real-Ip", "X-Remote-User", "Remote-User",
		"X-Auth-Request-User", "X-Auth-Request-Email", "X-Auth-Request-Groups", "X-Auth-Request-Access-Token",
		"Authorization", "Proxy-Authorization", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip",
		"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	} {
		forged.Add(name, "admin")
	}
	// Non-canonical keys, as a handler might set them directly in the map.
	forged["x-forwarded-user"] = []string{"root"}
	forged["X-FORWARDED-FOR"] = []string{"1.2.3.4"}
	forged["x-auth-request-user"] = []string{"root"}
	forged.Add("Connection", "keep-alive, X-Spark-Trust, x-other")
	forged.Add("Connection", "Upgrade")
	forged.Set("X-Spark-Trust", "yes")
	forged.Set("X-Other", "yes")
	forged.Set("Upgrade", "websocket")
	// kept
	forged.Set("Accept", "text/html")
	forged.Set("Accept-Encoding", "gzip")
	forged.Set("User-Agent", "test")
	forged.Set("If-None-Match", `"x"`)
	forged.Set("X-Requested-With", "XMLHttpRequest")
	forged.Set("X-Forwarded", "x") // no dash: removed as well

	StripRequest(forged, "")
	want := http.Header{
		"Accept":           {"text/html"},
		"Accept-Encoding":  {"gzip"},
		"User-Agent":       {"test"},
		"If-None-Match":    {`"x"`},
		"X-Requested-With": {"XMLHttpRequest"},
	}
	if diff := cmp.Diff(want, forged); diff != "" {
		t.Errorf("StripRequest headers mismatch (-want +got):\n%s", diff)
	}
}

func TestStripRequestCookies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want []string // nil: no Cookie header
	}{
		{"only gateway", []string{CookiePrefix + "=abc; " + CookiePrefix + "_1=def"}, nil},
		{"mixed", []string{"JSESSIONID=1; " + CookiePrefix + "=abc; theme=dark"}, nil},
		{"several headers", []string{"a=1", CookiePrefix + "_csrf=x; b=2"}, nil},
		{"spaces around name", []string{"  " + CookiePrefix + "=abc ;c=3"}, nil},
		{"idp session", []string{"_session=idp; _session.legacy=idp"}, nil},
		{"value with equals", []string{"a=b=c; " + CookiePrefix + "=x=y"}, nil},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, c := range tt.in {
				h.Add("Cookie", c)
			}
			StripRequest(h, "")
			if diff := cmp.Diff(tt.want, h["Cookie"]); diff != "" {
				t.Errorf("StripRequest cookies %q mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestStripRequestQuery(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"id=1", "id=1"},
		{"doAs=root", ""},
		{"id=1&doAs=root", "id=1"},
		{"doas=root&id=1", "id=1"},
		{"DOAS=root&id=1&DoAs=x", "id=1"},
		{"id=1&%64oAs=root", "id=1"},
		{"id=1&do%41s=root", "id=1"},
		{"id=1&doAs", "id=1"},
		{"id=1&doAs%20=root", "id=1"},
		{"id=1&+doAs=root", "id=1"},
		{"id=1;doAs=root", "id=1"},
		{"id=1;x=2&y=3", "id=1;x=2&y=3"},
		{"doAs=a;doas=b&y=3", "y=3"},
		{"a=doAs&doAsUser=1", "a=doAs&doAsUser=1"},
		{"id=1&&x=%2F", "id=1&&x=%2F"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := StripRequest(http.Header{}, tt.in); got != tt.want {
				t.Errorf("StripRequest(query %q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzStripRequestQuery(f *testing.F) {
	for _, s := range []string{"id=1&doAs=root", "%64oas=x", "a;doAs=1", "doAs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got := StripRequest(http.Header{}, q)
		if len(got) > len(q) {
			t.Fatalf("StripRequest(query %q) = %q grew", q, got)
		}
		// Neither Go's nor a ';'-splitting parser sees a doAs parameter.
		for _, part := range strings.FieldsFunc(got, func(r rune) bool { return r == '&' || r == ';' }) {
			k, _, _ := strings.Cut(part, "=")
			if dk, err := url.QueryUnescape(k); err == nil && strings.EqualFold(strings.TrimSpace(dk), "doas") {
				t.Fatalf("StripRequest(query %q) = %q keeps doAs", q, got)
			}
		}
	})
}
