//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// checkTakeover is issue 10's takeover, against a real History Server that
// lists e's finished app (History Server ACLs on, view ACLs: its owner and
// alice): mallory, whom the ACLs leave out, starts a server on a probed port
// that claims the app's id with herself as sparkUser. The claim is refused
// and counted; mallory stays refused everywhere, before and after her server
// stops; the owner keeps access, and the merged list keeps the History
// Server's owner.
func (s *suite) checkTakeover(t *testing.T, e *killEnv) {
	ctx := ctxFor(t, 3*time.Minute)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	id := e.d.AppID
	fake := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/applications":
			fmt.Fprintf(w, `[{"id":%q,"name":"mine","attempts":[{"sparkUser":"mallory","completed":false,"appSparkVersion":%q,"startTimeEpoch":%d,"endTimeEpoch":-1,"lastUpdatedEpoch":0}]}]`,
				id, e.home.Version, time.Now().UnixMilli())
		case "/api/v1/applications/" + id + "/environment":
			fmt.Fprint(w, `{"sparkProperties":[["spark.acls.enable","false"]],"systemProperties":[]}`)
		default:
			fmt.Fprint(w, `{"fake":true}`)
		}
	})}
	go func() { _ = fake.Serve(ln) }()
	stopFake := func() { _ = fake.Close() }
	t.Cleanup(stopFake)

	disc := map[string]any{
		"interval": "1s",
		"history":  []any{map[string]any{"name": "local", "url": e.hs.URL, "acls_enable": true}},
		"probe":    []any{map[string]any{"hosts": []string{"127.0.0.1"}, "ports": strconv.Itoa(port)}},
	}
	start := func(name, user string) (*Gateway, *http.Client) {
		dir := filepath.Join(e.dir, "gateway-takeover-"+name)
		if err := mkdir(dir); err != nil {
			t.Fatal(err)
		}
		auth := map[string]any{"mode": "local"}
		if user != "" {
			auth["local"] = map[string]any{"user": user}
		}
		return s.localGateway(ctx, t, dir, GatewayOptions{Discovery: disc, Auth: auth})
	}
	mgw, mc := start("mallory", "mallory")
	ogw, oc := start("owner", "")

	for _, g := range []*Gateway{mgw, ogw} {
		waitUntil(ctx, t, "the claim refused and counted", func() (bool, string) {
			n, err := g.Metric(ctx, "sparkgate_discovery_conflicts_total", `source="probe"`)
			return err == nil && n >= 1, fmt.Sprintf("%v, %v", n, err)
		})
	}
	refused := func(when string) {
		t.Helper()
		for _, p := range []string{"/hs/local/history/" + id + "/jobs/", "/api/v1/applications/" + id + "/logs", "/app/" + id + "/jobs/"} {
			resp, err := getNoFollow(ctx, mc, mgw.URL+p)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if a := (Answer{Status: resp.StatusCode, Body: body}); a.Verdict() != "deny" {
				t.Errorf("%s: mallory GET %s = %d %.200q; want a denial", when, p, resp.StatusCode, body)
			}
		}
		apps, err := mgw.Apps(ctx, mc)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range apps {
			if a.ID == id {
				t.Errorf("%s: mallory's list shows %s: %+v", when, id, a)
			}
		}
	}
	refused("while her server claims the app")

	resp, err := getNoFollow(ctx, oc, ogw.URL+"/hs/local/history/"+id+"/jobs/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the owner GET the history view of %s = %d; want 200", id, resp.StatusCode)
	}
	apps, err := ogw.Apps(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range apps {
		if a.ID == id {
			found = true
			if len(a.Attempts) == 0 || a.Attempts[0].SparkUser == "mallory" || !a.Attempts[0].Completed {
				t.Errorf("the owner's list shows %s as %+v; want the History Server's finished record", id, a)
			}
		}
	}
	if !found {
		t.Errorf("the owner's list lacks %s", id)
	}

	stopFake()
	time.Sleep(3 * time.Second) // a few discovery rounds
	refused("after her server stopped")
}

// waitUntil polls cond every 200 ms until it holds or ctx ends; the
// deadline only bounds a failing test.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s (last: %s)", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
