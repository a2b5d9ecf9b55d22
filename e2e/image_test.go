//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// imageTag is the image TestImage builds; nothing is pushed or pulled.
const imageTag = "localhost/sparkgate:e2e"

// containersConf makes podman work in a container like this machine's:
// no default ulimits (raising them is refused), cgroupfs (no systemd).
const containersConf = "[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = \"cgroupfs\"\n"

// TestImage builds a FROM scratch image holding only the static gateway
// binary (buildah; no registry is reachable, so no base image) and runs it
// with podman (host network, read-only root filesystem, user 65532) in
// front of a real driver: it lists the app, serves its jobs page and
// refuses a kill. The shipped deploy/Dockerfile stays multi-stage for real
// use; this proves the binary needs nothing from a base image.
func TestImage(t *testing.T) {
	s := newSuite(t)
	s.requireGateway(t)
	for _, tool := range []string{"buildah", "podman", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run scripts/setup-image.sh", tool)
		}
	}
	ctx := ctxFor(t, 8*time.Minute)
	dir := s.freshDir(t, "image")
	bin := filepath.Join(dir, "sparkgate-static")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/sparkgate")
	build.Dir = s.root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"))
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.WriteFile(filepath.Join(dir, "containers.conf"), []byte(containersConf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctr := run("buildah", "from", "scratch")
	t.Cleanup(func() { _ = exec.Command("buildah", "rm", ctr).Run() })
	run("buildah", "copy", ctr, bin, "/sparkgate")
	run("buildah", "config", "--entrypoint", `["/sparkgate"]`, "--user", "65532:65532", ctr)
	id := run("buildah", "commit", "-q", ctr, imageTag)
	t.Logf("built %s (%.12s) from scratch: %s", imageTag, id, run("podman", "image", "inspect", "--format", "{{.Size}} bytes, user {{.Config.User}}", imageTag))
	if v := run("podman", "run", "--rm", "--runtime", "runc", "--network", "host", "--read-only", imageTag, "-version"); !strings.HasPrefix(v, "sparkgate ") {
		t.Errorf("podman run %s -version = %q", imageTag, v)
	}

	home := s.sparkHomes(t)[0]
	work := filepath.Join(dir, "driver")
	d, err := StartDriver(ctx, s.root, home, DriverOptions{Name: "image", EventDir: filepath.Join(work, "events"), LogDir: work, WorkDir: work, Light: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	if err := d.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The harness starts "the gateway binary" with --config <dir>/sparkgate.yaml:
	// here that is podman running the image, with dir mounted read-only.
	gwDir := filepath.Join(dir, "gateway")
	if err := mkdir(gwDir); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "sparkgate-in-podman")
	script := fmt.Sprintf(`#!/bin/sh
# The config is written 0600 by the harness; the image runs as 65532.
chmod a+r %[1]s/sparkgate.yaml
export CONTAINERS_CONF=%[2]s
exec podman run --rm --runtime runc --network host --read-only --name sparkgate-e2e-%[3]d -v %[1]s:%[1]s:ro %[4]s "$@"
`, gwDir, filepath.Join(dir, "containers.conf"), os.Getpid(), imageTag)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gw, err := StartGateway(ctx, wrapper, gwDir, GatewayOptions{Discovery: map[string]any{
		"interval": "1s", "static": []string{d.UIURL()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	jar, err := gw.LocalSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := NoRedirectClient(jar)
	if _, _, err := gw.WaitListed(ctx, client, func(id string) bool { return id == d.AppID }); err != nil {
		t.Fatalf("%v\n%s", err, gw.Watch.Tail(20))
	}
	if user := run("podman", "inspect", "--format", "{{.Config.User}}", fmt.Sprintf("sparkgate-e2e-%d", os.Getpid())); user != "65532:65532" {
		t.Errorf("the gateway's container runs as %q; want 65532:65532", user)
	}
	if code, err := gatewayStatus(ctx, client, http.MethodGet, gw.URL+"/app/"+d.AppID+"/jobs/"); err != nil || code != http.StatusOK {
		t.Errorf("GET /app/%s/jobs/ through the image = %d (%v); want 200", d.AppID, code, err)
	}
	if code, err := gatewayStatus(ctx, client, http.MethodGet, gw.URL+"/app/"+d.AppID+"/jobs/job/kill/?id=0"); err != nil || code != http.StatusForbidden {
		t.Errorf("kill through the image = %d (%v); want 403", code, err)
	}
	t.Logf("the FROM scratch image serves %s (Spark %s) and refuses its kill", d.AppID, home.Version)
}
