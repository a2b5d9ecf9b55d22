package discovery

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func TestConfigYAML(t *testing.T) {
	t.Parallel()
	src := `
discovery:
  interval: 2s
  ended_retention: 1h
  logs:
    - paths: [/var/log/spark/*.log]
  probe:
    - hosts: [127.0.0.1, drv1]
      ports: "4040-4042,8090"
  standalone: [{url: "http://master:8080", cluster: prod}, {url: "http://master2:8080", cluster: prod}]
  static: ["http://10.0.0.5:4040"]
  kubernetes: {namespaces: [spark], api_server: "https://k8s:6443"}
  yarn: [{url: "http://rm:8088"}]
  history:
    - {name: local, url: "http://127.0.0.1:18080", acls_enable: true, admin_acls: [ops], admin_acls_groups: [admins]}
`
	var doc struct {
		Discovery Config `yaml:"discovery"`
	}
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Discovery
	c.SetDefaults()
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatalf("Validate() = %v; want no errors", errs)
	}
	if c.Interval != 2*time.Second || c.EndedRetention != time.Hour {
		t.Errorf("durations = %s, %s; want 2s, 1h", c.Interval, c.EndedRetention)
	}
	if c.Standalone[1] != (MasterSource{URL: "http://master2:8080", Cluster: "prod"}) {
		t.Errorf("standalone[1] = %+v", c.Standalone[1])
	}
	if c.Logs[0].Host != DefaultLogHost {
		t.Errorf("logs[0].host = %q; want default %q", c.Logs[0].Host, DefaultLogHost)
	}
	if c.Kubernetes.LabelSelector != "spark-role=driver" || c.Kubernetes.APIServer != "https://k8s:6443" {
		t.Errorf("kubernetes = %+v", c.Kubernetes)
	}
	want := HistorySource{Name: "local", URL: "http://127.0.0.1:18080", ACLsEnable: true, AdminACLs: []string{"ops"}, AdminACLsGroups: []string{"admins"}}
	if diff := cmp.Diff(want, c.History[0]); diff != "" {
		t.Errorf("history[0] (-want +got):\n%s", diff)
	}
}

func TestConfigDurationBad(t *testing.T) {
	t.Parallel()
	var c Config
	for _, bad := range []string{"interval: 5 parsecs", "interval: 5", "ended_retention: [1h]"} {
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("Unmarshal(%s) = nil error; want error", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := Config{
		Interval: time.Duration(time.Millisecond),
		Logs:     []LogSource{{Paths: []string{"[bad"}, Host: "http://x"}},
		Probe:    []ProbeSource{{Hosts: []string{"h"}, Ports: "40x0"}, {Ports: "5-4"}},
		Static:   []string{"ftp://x", "http://u:p@h:1"},
		YARN:     []URLSource{{URL: "http://rm:8088/?a=b"}},
		Standalone: []MasterSource{{URL: "http://m1:8080", Cluster: "a"}, {URL: "http://m2:8080", Cluster: "a"},
			{URL: " http://m1:8080/", Cluster: "b"}, {URL: "http://M2:8080", Cluster: "b"},
			{URL: "http://m3", Cluster: "c"}, {URL: "http://m3:80/", Cluster: "d"}},
		History: []HistorySource{
			{Name: "proxy", URL: "http://h:18080"},
			{Name: "Bad_Name", URL: "http://h:18080"},
			{Name: "a", URL: "http://h:18080"},
			{Name: "a", URL: ""},
		},
		Kubernetes: &KubernetesSource{APIServer: "https://k", Namespaces: []string{"NS!"}, LabelSelector: " "},
	}
	errs := c.Validate()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	wantPrefixes := []string{
		"discovery.interval: ",
		"discovery.logs[0].paths[0]: \"[bad\" is not a valid glob",
		"discovery.logs[0].host: ",
		`discovery.probe[0].ports: "40x0" is not a port or range`,
		"discovery.probe[1].hosts: at least one host is required",
		`discovery.probe[1].ports: "5-4" is not a port or range`,
		`discovery.standalone[2].url: " http://m1:8080/" is the master of standalone[0] already`,
		`discovery.standalone[3].url: "http://M2:8080" is the master of standalone[1] already`,
		`discovery.standalone[5].url: "http://m3:80/" is the master of standalone[4] already`,
		"discovery.static[0]: ",
		"discovery.static[1]: ",
		"discovery.kubernetes.namespaces[0]: ",
		"discovery.kubernetes.label_selector: ",
		"discovery.yarn[0].url: ",
		`discovery.history[0].name: "proxy" is reserved`,
		"discovery.history[1].name: ",
		`discovery.history[3].name: "a" is already used by history[2]`,
		"discovery.history[3].url: ",
	}
	if len(got) != len(wantPrefixes) {
		t.Fatalf("Validate() gave %d errors; want %d:\n%s", len(got), len(wantPrefixes), strings.Join(got, "\n"))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(got[i], p) {
			t.Errorf("Validate()[%d] = %q; want prefix %q", i, got[i], p)
		}
	}
}

func TestParsePorts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"4040-4042", []int{4040, 4041, 4042}, true},
		{"8090, 4040-4041,8090", []int{8090, 4040, 4041}, true},
		{"1", []int{1}, true},
		{"0", nil, false},
		{"65536", nil, false},
		{"40x0", nil, false},
		{"-5", nil, false},
		{"+80", nil, false},
		{"1-65535", nil, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, err := ParsePorts(tt.in)
		if (err == nil) != tt.ok || !cmp.Equal(got, tt.want) {
			t.Errorf("ParsePorts(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestLocalDefaults(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SPARK_LOG_DIR", dir)
	c := LocalDefaults()
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatalf("LocalDefaults().Validate() = %v", errs)
	}
	if len(c.Logs) != 1 || c.Logs[0].Paths[0] != dir+"/*.log" {
		t.Errorf("LocalDefaults().Logs = %+v; want globs in %s", c.Logs, dir)
	}
	if c.Probe[0].Ports != "4040-4056" || c.History[0].Name != "local" || c.History[0].URL != "http://127.0.0.1:18080" {
		t.Errorf("LocalDefaults() = %+v", c)
	}
	t.Setenv("SPARK_LOG_DIR", dir+"/missing")
	if c := LocalDefaults(); len(c.Logs) != 0 {
		t.Errorf("LocalDefaults() with a missing dir: Logs = %+v; want none", c.Logs)
	}
}
