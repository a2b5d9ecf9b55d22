package main

import (
	"os"
	"path/filepath"
	"testing"
)

// cgroupTree writes files (path relative to the cgroupfs root: content)
// into a temporary cgroupfs root and returns it.
func cgroupTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		self   string
		files  map[string]string
		want   int64
		wantOK bool
	}{{
		name:  "v2 container, namespaced to its own group",
		self:  "0::/\n",
		files: map[string]string{"memory.max": "268435456"},
		want:  256 << 20, wantOK: true,
	}, {
		name: "v2, a parent's limit is the smaller",
		self: "0::/kubepods/pod1/ctr\n",
		files: map[string]string{
			"kubepods/pod1/ctr/memory.max": "max",
			"kubepods/pod1/memory.max":     "134217728",
			"kubepods/memory.max":          "1073741824",
		},
		want: 128 << 20, wantOK: true,
	}, {
		name:  "v2 without a limit",
		self:  "0::/user.slice/session-1.scope\n",
		files: map[string]string{"user.slice/session-1.scope/memory.max": "max", "user.slice/memory.max": "max"},
	}, {
		name:  "v1 memory controller beside others",
		self:  "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
		files: map[string]string{"memory/docker/abc/memory.limit_in_bytes": "536870912"},
		want:  512 << 20, wantOK: true,
	}, {
		name:  "v1 group mounted as the controller's root",
		self:  "4:memory:/docker/abc\n",
		files: map[string]string{"memory/memory.limit_in_bytes": "536870912"},
		want:  512 << 20, wantOK: true,
	}, {
		name:  "v1 without a limit",
		self:  "4:memory:/\n",
		files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712"},
	}, {
		name:  "garbage",
		self:  "nonsense\n0::relative\n",
		files: map[string]string{"memory.max": "12x"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupMemoryLimit([]byte(tc.self), cgroupTree(t, tc.files))
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Errorf("cgroupMemoryLimit = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
