package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sparkgate/sparkgate/proxy/discovery"
)

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestKillConfirmModifyACL(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	target := "/app/" + appLive + "/jobs/job/kill/?id=7"

	// alice owns the app: she gets the confirmation page, not a kill.
	resp, body := h.do(t, "GET", target, "alice", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Kill job 7?") {
		t.Fatalf("GET kill link = %d; want the confirmation page:\n%s", resp.StatusCode, body)
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Fatalf("driver got %d requests before confirmation; want 0", n)
	}
	m := csrfInput.FindStringSubmatch(body)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			cookie = c
		}
	}
	if m == nil || cookie == nil {
		t.Fatalf("confirmation page has token %v, cookie %v; want both", m, cookie)
	}
	token := m[1]

	post := func(user, tok string, c *http.Cookie, hdr http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", h.gw.URL+target, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.AddCookie(&http.Cookie{Name: sessionName, Value: user})
		if c != nil {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	refused := []struct {
		name, user, token string
		cookie            *http.Cookie
		hdr               http.Header
		want              int
	}{
		{"no token", "alice", "", cookie, nil, http.StatusForbidden},
		{"no cookie", "alice", token, nil, nil, http.StatusForbidden},
		{"other cookie", "alice", token, &http.Cookie{Name: csrfCookie, Value: "x"}, nil, http.StatusForbidden},
		{"other user", "bob", token, cookie, nil, http.StatusForbidden},
		{"viewer without modify", "dave", token, cookie, nil, http.StatusForbidden},
		{"cross origin", "alice", token, cookie, http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
	}
	for _, tt := range refused {
		if resp := post(tt.user, tt.token, tt.cookie, tt.hdr); resp.StatusCode != tt.want {
			t.Errorf("POST kill (%s) = %d; want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	if n := len(h.drv.requests()); n != 0 {
		t.Fatalf("driver got %d requests from refused confirmations; want 0", n)
	}

	resp = post("alice", token, cookie, nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/app/"+appLive+"/jobs/" {
		t.Fatalf("POST kill = %d %q; want 303 to the jobs page", resp.StatusCode, loc)
	}
	got := h.drv.last(t)
	if got.Method != "GET" || got.Path != "/jobs/job/kill/" || got.RawQuery != "id=7" || got.Header.Get("Cookie") != "" {
		t.Errorf("driver got %s %s?%s cookie %q; want GET /jobs/job/kill/?id=7 without cookies", got.Method, got.Path, got.RawQuery, got.Header.Get("Cookie"))
	}

	// Other state-changing paths stay refused in this mode.
	if resp, _ := h.raw(t, "GET", "/app/"+appLive+"/jobs/hold/", "alice"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET hold in modify-acl mode = %d; want 403", resp.StatusCode)
	}
	if resp, _ := h.raw(t, "GET", "/app/"+appDenied+"/jobs/job/kill/?id=1", "alice"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("kill page of an app alice may not view = %d; want 403", resp.StatusCode)
	}
}

// TestSendKillSpark4 uses a driver that behaves as Spark 4.0.5 does (read
// from its classes and checked against a real driver in the e2e suite):
// the kill handler takes only POST, with the per-UI token of its kill form.
func TestSendKillSpark4(t *testing.T) {
	const token = "0f3a9c2b7d1e4f5a6b7c8d9e0f1a2b3c"
	var mu sync.Mutex
	var kills []url.Values
	drv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jobs/", "/stages/":
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			_, _ = io.WriteString(w, `<form method="post" action="/jobs/job/kill/"><input type="hidden" name="id" value="7"/>`+
				`<input type="hidden" name="csrfToken" value="`+token+`"/><a href="#" class="kill-link">(kill)</a></form>`)
		case "/jobs/job/kill/", "/stages/stage/kill/":
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			_ = r.ParseForm()
			if r.PostForm.Get("csrfToken") != token {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			mu.Lock()
			kills = append(kills, r.PostForm)
			mu.Unlock()
			w.Header().Set("Location", "http://"+r.Host+"/jobs/")
			w.WriteHeader(http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer drv.Close()
	h := newHarness(t, func(o *Options) { o.Config.Kill = KillModifyACL })
	u, _ := url.Parse(drv.URL)
	app := &discovery.App{ID: appLive, State: discovery.Running, UIURL: u}
	for _, tt := range []struct{ path, id string }{{"/jobs/job/kill/", "7"}, {"/stages/stage/kill/", "12"}} {
		if err := h.srv.sendKill(context.Background(), app, tt.path, tt.id); err != nil {
			t.Errorf("sendKill(%q, %q) = %v; want nil", tt.path, tt.id, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kills) != 2 || kills[0].Get("id") != "7" || kills[1].Get("id") != "12" {
		t.Errorf("driver took kills %v; want ids 7 and 12 posted with the token", kills)
	}
}
