package proxy

import (
	"fmt"
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
)

// Compress wraps h so that its answers are compressed (gzip, or zstd for
// a client that takes only zstd or prefers it) the way a Spark UI's own Jetty compresses them: the
// gateway asks upstreams for plain bytes, to strip kill controls and spare
// drivers the work, and would otherwise serve pages and REST JSON several
// times larger than the driver itself does. Bodies below 1 KiB, answers
// that are already encoded, and compressed formats (the event-log zip) go
// out as they are.
//
// Pages can carry secrets (the kill confirmation's CSRF token) next to text
// others choose (app and job names), the setting of BREACH; compressed
// sizes get up to 32 bytes of content-dependent padding so that they do not
// tell one guess from the next.
func Compress(h http.Handler) (http.Handler, error) {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.MinSize(1024),
		gzhttp.CompressionLevel(gzip.BestSpeed),
		// Browsers accept both; at these levels gzip costs about 1% on
		// top of proxying and stripping a Spark page and zstd about 8%,
		// for the same size (BenchmarkServeAppHTML).
		gzhttp.PreferZstd(false),
		gzhttp.RandomJitter(32, 0, false),
	)
	if err != nil {
		return nil, fmt.Errorf("building the compressing handler: %w", err)
	}
	return wrap(h), nil
}
