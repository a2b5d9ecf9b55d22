//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// FindSparkHomes lists the Spark installations under .cache/spark/*, sorted by
// version. SPARK_E2E_VERSIONS (space-separated) may narrow the list.
func FindSparkHomes(root string) ([]SparkHome, error) {
	pys, err := filepath.Glob(filepath.Join(root, ".cache", "spark", "*", "venv", "lib", "python3*", "site-packages", "pyspark"))
	if err != nil {
		return nil, fmt.Errorf("globbing spark homes: %w", err)
	}
	want := map[string]bool{}
	for _, v := range splitFields(os.Getenv("SPARK_E2E_VERSIONS")) {
		want[v] = true
	}
	var homes []SparkHome
	for _, p := range pys {
		if _, err := os.Stat(filepath.Join(p, "bin", "spark-class")); err != nil {
			continue
		}
		venv := filepath.Clean(filepath.Join(p, "..", "..", "..", ".."))
		ver := filepath.Base(filepath.Dir(venv))
		if len(want) > 0 && !want[ver] {
			continue
		}
		homes = append(homes, SparkHome{Version: ver, Venv: venv, Python: filepath.Join(venv, "bin", "python"), Home: p})
	}
	sort.Slice(homes, func(i, j int) bool { return homes[i].Version < homes[j].Version })
	return homes, nil
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
