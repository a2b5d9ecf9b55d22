//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

var figuresMu sync.Mutex

// RecordFigure appends "name value" with a timestamp to <outDir>/figures.txt,
// the suite's measured timings.
func RecordFigure(outDir, name string, value any) error {
	figuresMu.Lock()
	defer figuresMu.Unlock()
	f, err := os.OpenFile(filepath.Join(outDir, "figures.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening figures.txt: %w", err)
	}
	defer f.Close()
	if d, ok := value.(time.Duration); ok {
		value = d.Round(time.Millisecond)
	}
	_, err = fmt.Fprintf(f, "%s\t%s\t%v\n", time.Now().UTC().Format(time.RFC3339), name, value)
	return err
}
