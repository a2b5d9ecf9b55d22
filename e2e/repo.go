//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
)

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("no caller information")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above %s", file)
		}
		dir = parent
	}
}

// SparkHome is one Spark installation made by scripts/setup-spark.sh.
type SparkHome struct {
	Version string // e.g. "3.5.9"
	Venv    string // the virtualenv directory
	Python  string // the venv's python
	Home    string // SPARK_HOME: the pyspark package directory (bin/, jars/)
}

// FindSparkHomes lists the complete Spark installations under
// .cache/spark/* (those scripts/setup-spark.sh finished: it writes .done
// last), sorted by version.
func FindSparkHomes(root string) ([]SparkHome, error) {
	pys, err := filepath.Glob(filepath.Join(root, ".cache", "spark", "*", "venv", "lib", "python3*", "site-packages", "pyspark"))
	if err != nil {
		return nil, fmt.Errorf("globbing spark homes: %w", err)
	}
	var homes []SparkHome
	for _, p := range pys {
		if _, err := os.Stat(filepath.Join(p, "bin", "spark-class")); err != nil {
			continue
		}
		venv := filepath.Clean(filepath.Join(p, "..", "..", "..", ".."))
		if _, err := os.Stat(filepath.Join(filepath.Dir(venv), ".done")); err != nil {
			continue
		}
		ver := filepath.Base(filepath.Dir(venv))
		homes = append(homes, SparkHome{Version: ver, Venv: venv, Python: filepath.Join(venv, "bin", "python"), Home: p})
	}
	sort.Slice(homes, func(i, j int) bool { return homes[i].Version < homes[j].Version })
	return homes, nil
}

var reSetupVersions = regexp.MustCompile(`\$\{SPARK_VERSIONS:-([^}]*)\}`)

// WantedSparkVersions returns the Spark versions the suite must run: those
// named by SPARK_E2E_VERSIONS (space-separated, to narrow a run on
// purpose), else those scripts/setup-spark.sh installs (its default list,
// or SPARK_VERSIONS as the script itself reads it).
func WantedSparkVersions(root string) ([]string, error) {
	if v := splitFields(os.Getenv("SPARK_E2E_VERSIONS")); len(v) > 0 {
		return v, nil
	}
	if v := splitFields(os.Getenv("SPARK_VERSIONS")); len(v) > 0 {
		return v, nil
	}
	b, err := os.ReadFile(filepath.Join(root, "scripts", "setup-spark.sh"))
	if err != nil {
		return nil, fmt.Errorf("reading the Spark versions setup installs: %w", err)
	}
	m := reSetupVersions.FindSubmatch(b)
	if m == nil || len(splitFields(string(m[1]))) == 0 {
		return nil, fmt.Errorf("scripts/setup-spark.sh names no default ${SPARK_VERSIONS:-…} list")
	}
	return splitFields(string(m[1])), nil
}

// matchVersions returns the installations of the wanted versions, in the
// order of installed, and the wanted versions not installed.
func matchVersions(installed []SparkHome, want []string) (homes []SparkHome, missing []string) {
	have := map[string]bool{}
	for _, h := range installed {
		if slices.Contains(want, h.Version) {
			homes = append(homes, h)
			have[h.Version] = true
		}
	}
	for _, v := range want {
		if !have[v] {
			missing = append(missing, v)
		}
	}
	return homes, missing
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i, r := range s + " " {
		if r == ' ' || r == ',' || r == '\t' || r == '\n' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return out
}
