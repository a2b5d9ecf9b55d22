package discovery

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Config is the `discovery:` section of the gateway configuration. Every
// source is optional; they combine.
type Config struct {
	// Interval is the period of the probes, cluster-manager and History
	// Server polls and of the liveness re-checks. Default 5s.
	Interval time.Duration `yaml:"interval"`
	// Logs are driver log files or globs, followed as they grow. Default none.
	Logs []LogSource `yaml:"logs"`
	// Probe lists hosts and port ranges dialled each interval. Default none.
	Probe []ProbeSource `yaml:"probe"`
	// Standalone lists Spark standalone masters whose active apps are found
	// through /json and the app page. Default none.
	Standalone []MasterSource `yaml:"standalone"`
	// Static lists driver UI root URLs (scheme://host:port). Default none.
	Static []string `yaml:"static"`
	// Kubernetes finds running driver pods. Default nil (off).
	Kubernetes *KubernetesSource `yaml:"kubernetes"`
	// YARN lists ResourceManagers (http://rm:8088) whose RUNNING apps are
	// followed through the RM web proxy. Default none.
	YARN []URLSource `yaml:"yarn"`
	// History lists Spark History Servers, for the index and for finished
	// apps. Default none.
	History []HistorySource `yaml:"history"`
	// EndedRetention is how long an ended app that no History Server knows
	// stays listed, counted from its end. Default 24h.
	EndedRetention time.Duration `yaml:"ended_retention"`
	// AllowedNetworks bounds where drivers may live: CIDRs ("10.0.0.0/8")
	// or single addresses. A candidate whose address (resolved once, at
	// verification) is outside every one of them is refused. It applies to
	// every driver address discovery finds, YARN ResourceManager web
	// proxies included; History Servers and cluster APIs named in this
	// file are not bound by it. Default empty: any address.
	AllowedNetworks []string `yaml:"allowed_networks"`
}

// LogSource is a set of driver log files.
type LogSource struct {
	// Paths are file names or globs (filepath.Match syntax), re-evaluated
	// on every poll (200 ms). Required.
	Paths []string `yaml:"paths"`
	// Host is the driver host used when a log line names only a port and
	// the log holds no host hint. Default "127.0.0.1".
	Host string `yaml:"host"`
}

// ProbeSource is a set of hosts whose ports are dialled each interval.
type ProbeSource struct {
	// Hosts are host names or IP addresses. Required.
	Hosts []string `yaml:"hosts"`
	// Ports is a comma list of ports and ranges, e.g. "4040-4056,8090".
	// Default "4040-4056" (Spark's default port and its 16 retries).
	Ports string `yaml:"ports"`
}

// URLSource is a service reached by its root URL.
type URLSource struct {
	// URL is the root URL, e.g. http://master:8080. Required.
	URL string `yaml:"url"`
}

// MasterSource is a Spark standalone master.
type MasterSource struct {
	// URL is the master's web UI root URL, e.g. http://master:8080.
	// Required.
	URL string `yaml:"url"`
	// Cluster names the HA cluster the master belongs to: the masters of
	// one spark://m1:7077,m2:7077 share it. An app one of them named
	// follows the others when they list it after a failover, even while
	// this one is silent or gone for good. Default none: the master's apps
	// follow another source's listing only in a round where it answers.
	Cluster string `yaml:"cluster"`
}

// KubernetesSource finds driver pods through the Kubernetes API.
type KubernetesSource struct {
	// APIServer is the API server URL. Default in-cluster:
	// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT.
	APIServer string `yaml:"api_server"`
	// TokenFile holds the bearer token, re-read on each poll because
	// projected tokens rotate. Default the service-account token file.
	TokenFile string `yaml:"token_file"`
	// CAFile is the PEM bundle that signs the API server's certificate.
	// Default the service-account ca.crt; empty after defaults means the
	// system roots.
	CAFile string `yaml:"ca_file"`
	// Namespaces to list; empty means all namespaces. Default empty.
	Namespaces []string `yaml:"namespaces"`
	// LabelSelector selects driver pods; spark-role=driver is added unless
	// it names spark-role itself. Default "spark-role=driver".
	LabelSelector string `yaml:"label_selector"`
	// Kubeconfig is a kubeconfig file to use instead of api_server,
	// token_file and ca_file (which must then be unset). Default none.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context. Default its current context.
	Context string `yaml:"context"`
	// Resync is the informers' resync period: every pod is offered again
	// from the cache this often (no API request). Default 10m.
	Resync time.Duration `yaml:"resync"`
	// SparkApplications is "auto" (watch the Spark operator's
	// SparkApplications where the API server serves them) or "off".
	// Default "auto".
	SparkApplications string `yaml:"spark_applications"`
}

// HistorySource is one Spark History Server.
type HistorySource struct {
	// Name identifies the server in URLs and logs; it matches
	// ^[a-z0-9][a-z0-9-]{0,30}$ and is neither "proxy" nor "history".
	// Required.
	Name string `yaml:"name"`
	// URL is the History Server root, e.g. http://127.0.0.1:18080. Required.
	URL string `yaml:"url"`
	// ACLsEnable mirrors the server's spark.history.ui.acls.enable. Default false.
	ACLsEnable bool `yaml:"acls_enable"`
	// AdminACLs mirrors spark.history.ui.admin.acls. Default none.
	AdminACLs []string `yaml:"admin_acls"`
	// AdminACLsGroups mirrors spark.history.ui.admin.acls.groups. Default none.
	AdminACLsGroups []string `yaml:"admin_acls_groups"`
}

// Defaults, in one place.
const (
	DefaultInterval       = 5 * time.Second
	DefaultEndedRetention = 24 * time.Hour
	DefaultPorts          = "4040-4056"
	DefaultLogHost        = "127.0.0.1"
	DefaultLabelSelector  = "spark-role=driver"
	DefaultResync         = 10 * time.Minute
	// DefaultLogDir is where LocalDefaults looks for driver logs when
	// $SPARK_LOG_DIR is unset.
	DefaultLogDir   = "/tmp/spark-logs"
	serviceAcctDir  = "/var/run/secrets/kubernetes.io/serviceaccount"
	maxProbeTargets = 4096
)

// SetDefaults fills every unset field with its default.
func (c *Config) SetDefaults() {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.EndedRetention == 0 {
		c.EndedRetention = DefaultEndedRetention
	}
	for i := range c.Logs {
		if c.Logs[i].Host == "" {
			c.Logs[i].Host = DefaultLogHost
		}
	}
	for i := range c.Probe {
		if c.Probe[i].Ports == "" {
			c.Probe[i].Ports = DefaultPorts
		}
	}
	if k := c.Kubernetes; k != nil && k.Kubeconfig == "" {
		if k.APIServer == "" {
			if h, p := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"); h != "" && p != "" {
				k.APIServer = "https://" + net.JoinHostPort(h, p)
			} else {
				k.APIServer = "https://kubernetes.default.svc"
			}
		}
		if k.TokenFile == "" {
			k.TokenFile = serviceAcctDir + "/token"
		}
		if k.CAFile == "" {
			k.CAFile = serviceAcctDir + "/ca.crt"
		}
	}
	if k := c.Kubernetes; k != nil {
		if k.LabelSelector == "" {
			k.LabelSelector = DefaultLabelSelector
		}
		if k.Resync == 0 {
			k.Resync = DefaultResync
		}
		if k.SparkApplications == "" {
			k.SparkApplications = "auto"
		}
	}
}

// LocalDefaults is the safe configuration for one machine: probe
// 127.0.0.1:4040-4056, follow $SPARK_LOG_DIR/*.log and *.out (or
// /tmp/spark-logs/… when the variable is unset) if that directory exists,
// and use the History Server at http://127.0.0.1:18080 under the name
// "local".
func LocalDefaults() Config {
	c := Config{
		Probe:   []ProbeSource{{Hosts: []string{"127.0.0.1"}, Ports: DefaultPorts}},
		History: []HistorySource{{Name: "local", URL: "http://127.0.0.1:18080"}},
	}
	dir := os.Getenv("SPARK_LOG_DIR")
	if dir == "" {
		dir = DefaultLogDir
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() { //nolint:gosec // dir is the operator's own SPARK_LOG_DIR (or the default); Stat reads nothing
		c.Logs = []LogSource{{
			Paths: []string{filepath.Join(dir, "*.log"), filepath.Join(dir, "*.out")},
			Host:  DefaultLogHost,
		}}
	}
	c.SetDefaults()
	return c
}

var (
	historyNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`)
	dnsLabelRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// Validate reports every problem in the configuration, each naming its key.
// It does not touch the network or the file system.
func (c *Config) Validate() []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("discovery.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Interval < 100*time.Millisecond {
		add("interval", "%s is below the minimum of 100ms", c.Interval)
	}
	if c.EndedRetention < 0 {
		add("ended_retention", "%s is negative", c.EndedRetention)
	}
	for i, n := range c.AllowedNetworks {
		if _, err := parseNetwork(n); err != nil {
			add(fmt.Sprintf("allowed_networks[%d]", i), "%v", err)
		}
	}
	for i, l := range c.Logs {
		key := fmt.Sprintf("logs[%d]", i)
		if len(l.Paths) == 0 {
			add(key+".paths", "at least one path or glob is required")
		}
		for j, p := range l.Paths {
			if p == "" {
				add(fmt.Sprintf("%s.paths[%d]", key, j), "empty path")
			} else if _, err := filepath.Match(p, ""); err != nil {
				add(fmt.Sprintf("%s.paths[%d]", key, j), "%q is not a valid glob: %v", p, err)
			}
		}
		if err := checkHost(l.Host); err != nil {
			add(key+".host", "%v", err)
		}
	}
	for i, p := range c.Probe {
		key := fmt.Sprintf("probe[%d]", i)
		if len(p.Hosts) == 0 {
			add(key+".hosts", "at least one host is required")
		}
		for j, h := range p.Hosts {
			if err := checkHost(h); err != nil {
				add(fmt.Sprintf("%s.hosts[%d]", key, j), "%v", err)
			}
		}
		ports, err := ParsePorts(p.Ports)
		if err != nil {
			add(key+".ports", "%v", err)
		} else if n := len(ports) * len(p.Hosts); n > maxProbeTargets {
			add(key, "%d host×port pairs exceed the limit of %d", n, maxProbeTargets)
		}
	}
	masterAt := map[string]int{} // scheme://host:port/path -> index
	for i, s := range c.Standalone {
		u, err := parseRootURL(s.URL)
		if err != nil {
			add(fmt.Sprintf("standalone[%d].url", i), "%v", err)
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		key := u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port + u.Path
		if j, dup := masterAt[key]; dup {
			add(fmt.Sprintf("standalone[%d].url", i), "%q is the master of standalone[%d] already", s.URL, j)
			continue
		}
		masterAt[key] = i
	}
	for i, s := range c.Static {
		if _, err := parseRootURL(s); err != nil {
			add(fmt.Sprintf("static[%d]", i), "%v", err)
		}
	}
	if k := c.Kubernetes; k != nil {
		switch {
		case k.Kubeconfig != "" && (k.APIServer != "" || k.TokenFile != "" || k.CAFile != ""):
			add("kubernetes.kubeconfig", "set either kubeconfig or api_server, token_file and ca_file, not both")
		case k.Kubeconfig == "":
			if _, err := parseRootURL(k.APIServer); err != nil {
				add("kubernetes.api_server", "%v", err)
			}
			if k.Context != "" {
				add("kubernetes.context", "needs kubeconfig")
			}
		}
		if k.Resync < time.Minute && k.Resync != 0 {
			add("kubernetes.resync", "%s is below the minimum of 1m", k.Resync)
		}
		if k.SparkApplications != "auto" && k.SparkApplications != "off" && k.SparkApplications != "" {
			add("kubernetes.spark_applications", "%q must be auto or off", k.SparkApplications)
		}
		if _, err := driverSelector(k.LabelSelector); err != nil && strings.TrimSpace(k.LabelSelector) != "" {
			add("kubernetes.label_selector", "%v", err)
		}
		for i, ns := range k.Namespaces {
			if !dnsLabelRE.MatchString(ns) {
				add(fmt.Sprintf("kubernetes.namespaces[%d]", i), "%q is not a namespace name", ns)
			}
		}
		if strings.TrimSpace(k.LabelSelector) == "" {
			add("kubernetes.label_selector", "empty selector")
		}
	}
	for i, s := range c.YARN {
		if _, err := parseRootURL(s.URL); err != nil {
			add(fmt.Sprintf("yarn[%d].url", i), "%v", err)
		}
	}
	seen := map[string]int{}
	for i, h := range c.History {
		key := fmt.Sprintf("history[%d]", i)
		switch {
		case !historyNameRE.MatchString(h.Name):
			add(key+".name", "%q must match ^[a-z0-9][a-z0-9-]{0,30}$", h.Name)
		case h.Name == "proxy" || h.Name == "history":
			add(key+".name", "%q is reserved", h.Name)
		default:
			if j, dup := seen[h.Name]; dup {
				add(key+".name", "%q is already used by history[%d]", h.Name, j)
			}
			seen[h.Name] = i
		}
		if _, err := parseRootURL(h.URL); err != nil {
			add(key+".url", "%v", err)
		}
	}
	return errs
}

// ParsePorts parses a comma list of ports and inclusive ranges
// ("4040-4056,8090") into ports in the given order, without duplicates.
func ParsePorts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no ports")
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := parsePort(lo)
		b := a
		var errB error
		if isRange {
			b, errB = parsePort(hi)
		}
		if errA != nil || errB != nil || b < a {
			return nil, fmt.Errorf("%q is not a port or range", part)
		}
		if b-a >= maxProbeTargets {
			return nil, fmt.Errorf("range %q is wider than %d ports", part, maxProbeTargets)
		}
		for p := a; p <= b; p++ {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func parsePort(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] == '+' {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return n, nil
}

func checkHost(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	if ip := net.ParseIP(h); ip != nil {
		return nil
	}
	if strings.ContainsAny(h, "/:@?# ") || !strings.ContainsFunc(h, func(r rune) bool { return r != '.' }) {
		return fmt.Errorf("%q is not a host name or IP address", h)
	}
	return nil
}
