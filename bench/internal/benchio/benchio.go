// Package benchio holds what the benchmark programs under bench/cmd share.
package benchio

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

// SaveURL writes the body of a GET of url (200 only) to the file path: a
// profile of a gateway's loopback debug endpoint, say.
func SaveURL(url, path string) error {
	resp, err := http.Get(url) //nolint:gosec,noctx // a benchmark's own loopback endpoint
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
