package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// The fast path (stripscan.go) must give, byte for byte, the output of the
// tokenizer-based stripper (the reference, built on x/net/html's
// tokenizer), whatever the input and however src splits it.

var errDiffSource = errors.New("source failed")

// splitReader returns s in two reads, split at k, then err.
type splitReader struct {
	s   string
	k   int
	err error
}

func (r *splitReader) Read(p []byte) (int, error) {
	if r.k > 0 {
		n := copy(p, r.s[:min(r.k, len(r.s))])
		r.s, r.k = r.s[n:], r.k-n
		return n, nil
	}
	if len(r.s) == 0 {
		return 0, r.err
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

// runStripper reads all of r with reads of n bytes and returns the output
// and the error that ended it.
func runStripper(r io.ReadCloser, n int) (string, error) {
	var out bytes.Buffer
	buf := make([]byte, n)
	for range 1 << 24 {
		k, err := r.Read(buf)
		out.Write(buf[:k])
		if err != nil {
			_ = r.Close()
			return out.String(), err
		}
	}
	return out.String(), errors.New("no end")
}

// diffStrippers runs in through the fast path and the reference, with src
// split at k and ending in srcErr, in both modes, and fails on any
// difference.
func diffStrippers(t testing.TB, in string, k, readSize int, srcErr error) {
	t.Helper()
	for _, rewrite := range []bool{false, true} {
		prefix := ""
		if rewrite {
			prefix = "/app/a&amp;b"
		}
		fast, ferr := runStripper(newFastStripper(io.NopCloser(&splitReader{s: in, k: k, err: srcErr}), rewrite, prefix), readSize)
		ref, rerr := runStripper(newReferenceStripper(io.NopCloser(&splitReader{s: in, k: k, err: srcErr}), rewrite, prefix), readSize)
		if fast != ref || !errors.Is(ferr, rerr) {
			t.Fatalf("rewrite=%v, split at %d, reads of %d, source error %v:\nin   %q\nfast %q (%v)\nref  %q (%v)",
				rewrite, k, readSize, srcErr, in, fast, ferr, ref, rerr)
		}
	}
}

// sparkPages returns the captured Spark pages of testdata.
func sparkPages(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob("testdata/spark-*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata pages: %v", err)
	}
	pages := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = string(b)
	}
	return pages
}

// TestStripperMatchesReferenceOnSparkPages feeds every captured page, split
// at every 61st byte and read in several sizes, to both.
func TestStripperMatchesReferenceOnSparkPages(t *testing.T) {
	t.Parallel()
	for name, page := range sparkPages(t) {
		t.Run(name, func(t *testing.T) {
			for k := 0; k <= len(page); k += 61 {
				diffStrippers(t, page, k, 4096, io.EOF)
			}
			for _, n := range []int{1, 7, 512, 1 << 16} {
				diffStrippers(t, page, len(page)/2, n, io.EOF)
			}
			diffStrippers(t, page, len(page)/3, 4096, errDiffSource)
		})
	}
}

// TestStripperMatchesReference holds inputs where the two once differed
// or that exercise the tokenizer's corner cases; each is split at every
// byte.
func TestStripperMatchesReference(t *testing.T) {
	t.Parallel()
	for _, in := range diffSeeds {
		for k := 0; k <= len(in); k++ {
			diffStrippers(t, in, k, 3, io.EOF)
			diffStrippers(t, in, k, 4096, errDiffSource)
		}
	}
}

var diffSeeds = []string{
	`<td><a href="/jobs/job/kill/?id=1" class="kill-link">(kill)</a><a href="/x">x</a></td>`,
	`<form action="/app/x/jobs/job/kill/" method="POST"><input type="hidden" name="id" value="3"/><a href="#" class="kill-link">(kill)</a></form>after`,
	`<form action="app/kill/"><a href="#" class="kill-link">(kill)</a></form>`,
	`<script><a class="kill-link"></script><a class=kill-link>x</a>`,
	`<script><!--<script></script><a class=kill-link></script>--></script><a class=kill-link>y</a>`,
	`<script><!-- </script><a class=kill-link>z</a>`,
	`<SCRIPT>x</scripT ><a class=kill-link>1</a>`,
	`<style></style ><a class=kill-link>1</a><title><a class=kill-link></title>`,
	`<textarea></textareax><a class=kill-link>1</a></textarea><a class=kill-link>2</a>`,
	`<!--><a class=kill-link>1</a><!---><a class=kill-link>2</a><!-- --!><a class=kill-link>3</a>`,
	`<!-- -- ! --!-><a class=kill-link>1</a>--><a class=kill-link>2</a>`,
	`<!DOCTYPE html><!x <a class=kill-link>1> <? <a class=kill-link>2 ?> </ <a class=kill-link>3> </><a class=kill-link>4</a>`,
	`<div title="<a class=kill-link>" data-x='>'><a class=kill-link>1</a></div>`,
	`<a b=c=d class=kill-link/>x</a><a =class=kill-link>y</a>`,
	`<a class="kill-link" href="#">(kill)</td><td>next</td>`,
	`<a class="kill-link"><script>x</a></script>y</a>z`,
	`<a class="kill-link"><plaintext></a>more`,
	`<a href="/x/&percnt;6Bill/">k</a><a href="/x/ki&#108;l">k</a><a href="/x/k&imath;ll">k</a>`,
	`<a href="/jobs/job/kill&nbsp/">k</a><a href="/jobs/?x=1&activeJob.sort=Id">ok</a>`,
	`<p>a <b>b</b> &amp; c <`,
	`<a href="/jobs/job/kill/?id=1" class="kill-link"`,
	`<a class=kill-link>x<!--</a>--></a>y`,
	`<button class="kill-link">k<button>ok</button><input formaction="/jobs/job/kill/">`,
	`<a class=kill-link><a class=kill-link>`,
	`<a class=kill-link>1<b><i></b></i></a>2</p>3`,
	`<xmp><a class=kill-link></xmp><noscript><a class=kill-link></noscript><iframe><a class=kill-link></iframe>`,
	"<a\tclass=kill-link\f/>\r\n</a\n>",
}

// FuzzStripperDifferential feeds the same input, split at every byte (at
// 64 places for inputs over 256 bytes), to the fast path and to the
// reference; seeds are the captured Spark pages (1 KB around their first
// kill control; more of the kill-heavy pages), diffSeeds, and tags whose
// attributes the fast path's rawTag reads or hands to the tokenizer.
func FuzzStripperDifferential(f *testing.F) {
	for _, s := range diffSeeds {
		f.Add(s)
	}
	for _, page := range sparkPages(f) {
		i := strings.Index(page, "kill")
		if i < 0 {
			f.Add(page[:min(len(page), 1024)])
			continue
		}
		f.Add(page[max(0, i-512):min(len(page), i+512)])
	}
	// The kill-heavy pages (a jobs page with 20 jobs running) once more:
	// 4 KB from their first kill control, several controls in a row (whole,
	// they are in TestStripperMatchesReferenceOnSparkPages).
	for name, page := range sparkPages(f) {
		if !strings.Contains(name, "-jobs-kill") {
			continue
		}
		i := strings.Index(page, "kill")
		f.Add(page[max(0, i-512):min(len(page), i+4096)])
	}
	f.Add(`<a HREF=/jobs/job/kill/?id=1 Class=x class=kill-link onclick="a" href="/x">k</a><a class=x CLASS=kill-link>ok</a>`)
	f.Add(`<form action=/app/x/jobs/job/kill/ ><input name=id value=4/><INPUT NAME="id" value='5' name=x /><a href="#" class="kill-link" data-kill-message="kill 4?">(kill)</a></form>`)
	f.Add(`<a class="kill-link" href="/jobs/job/kill/?id=1&amp;x=2">k</a><form action="/jobs/job/kill/"><input name="id" value="&#55;"><input name="id" value="7
"></form>`)
	f.Add(`<a class=kill-link><b/><i a=b/><br/><p x/ ></i></a><a href=/x/ kill-link/>y</a>`)
	// Kill controls told by their first attribute (firstAttrKills), and
	// near misses.
	f.Add(`<A HREF="/x/KILL\" class="&#107;ill" href="/y">k</A><form ACTION="/app/x/jobs/job/kill" action="/y"><input name=id value=3></form>` +
		`<a href="/jobs/job/kill/?id=2&amp;x" class="kill-link">z</a><a href="/kill/x"/>ok<a  href="/kill">s</a><a href= "/kill">t</a><form action="/kill/">`)
	f.Fuzz(func(t *testing.T, in string) {
		// A stripper that never ends is a failure with this input, not a
		// hung fuzzer.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("stripping %q does not end", in))
			}
		}()
		// Every split point of a short input; about 64 of a longer one.
		step := 1
		if len(in) > 256 {
			step = len(in)/64 + 1
		}
		for k := 0; k <= len(in); k += step {
			diffStrippers(t, in, k, 64, io.EOF)
		}
		diffStrippers(t, in, len(in)/2, 4096, errDiffSource)
	})
}

// TestStripperCopyPathAllocs: a page without kill controls costs the
// fast path one allocation (the reader itself), whatever its size; its
// buffer comes from a pool.
func TestStripperCopyPathAllocs(t *testing.T) {
	page, err := os.ReadFile("testdata/spark-4.3.0-executors.html")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte("kill")) {
		t.Fatal("the page has kill controls")
	}
	var src bytes.Reader
	buf := make([]byte, 32<<10)
	sink := new(sinkWriter)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(page)
		r := NewStrippingReader(nopCloser{&src})
		if _, err := io.CopyBuffer(sink, r, buf); err != nil {
			t.Fatal(err)
		}
		_ = r.Close()
	})
	// nopCloser{&src} in an interface is one more.
	if allocs > 2 {
		t.Errorf("stripping a %d byte page without kill controls allocates %v times; want at most 2", len(page), allocs)
	}
}

// TestStripperKillPageAllocs: a page with a kill control per row (20
// jobs running) costs the fast path no allocation per control, in both
// modes: the judged tags' attributes are read in place (rawTag), and the
// kept tags and confirmation links fit the reader's stripBufs.
func TestStripperKillPageAllocs(t *testing.T) {
	for _, v := range []string{"3.5.9", "4.0.5", "4.3.0"} {
		page, err := os.ReadFile("testdata/spark-" + v + "-jobs-kill20.html")
		if err != nil {
			t.Fatal(err)
		}
		for _, rewrite := range []bool{false, true} {
			var src bytes.Reader
			buf := make([]byte, 32<<10)
			sink := new(sinkWriter)
			allocs := testing.AllocsPerRun(50, func() {
				src.Reset(page)
				r := newFastStripper(nopCloser{&src}, rewrite, "/app/x")
				if _, err := io.CopyBuffer(sink, r, buf); err != nil {
					t.Fatal(err)
				}
				_ = r.Close()
			})
			t.Logf("%s rewrite=%v: %v allocations", v, rewrite, allocs)
			// The reader, its stripBufs, and nopCloser{&src} in an interface.
			if allocs > 3 {
				t.Errorf("stripping %s's kill-heavy jobs page (rewrite %v) allocates %v times; want at most 3", v, rewrite, allocs)
			}
		}
	}
}

// TestStripperMatchesReferenceLargeTokens: tokens longer than the
// tokenizer's maxTokenBuf, where the fast path hands an oversized tag to
// the reference and takes the stream back after it, and streams long text
// and scripts itself.
func TestStripperMatchesReferenceLargeTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("several MB through the reference")
	}
	t.Parallel()
	big := strings.Repeat("x", maxTokenBuf+17)
	for _, in := range []string{
		"<p>" + big + "</p><a class=kill-link>k</a>.",
		"<script>" + big + "<a class=kill-link>k</a></script><a class=kill-link>k</a>.",
		"<a class=kill-link>" + big + "</a>.<a class=kill-link>k</a>",
		`<p><a class=kill-link title="` + big + `">(kill)</a>.</p><a href="/jobs/job/kill/?id=1">k</a>`,
		`<div title="` + big + `">x</div><a class=kill-link>k</a>.`,
		`<form action="/app/a/jobs/job/kill/"><input name="id" value="2" title="` + big + `"></form>.`,
	} {
		for _, k := range []int{0, 5, maxTokenBuf - 3, maxTokenBuf + 20} {
			diffStrippers(t, in, k, 32<<10, io.EOF)
		}
	}
}

// addSparkStartTags seeds f with every start tag of the captured Spark
// pages.
func addSparkStartTags(f *testing.F) {
	for _, page := range sparkPages(f) {
		z := html.NewTokenizer(strings.NewReader(page))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
				f.Add(string(z.Raw()))
			}
		}
	}
}

// scanTagAlone is scanTag on b, a tag at its start and what follows, with
// b's own index.
func scanTagAlone(b []byte) (end int, ok bool) {
	var x byteIndex
	x.mark(b, 0)
	return scanTag(b, &x, 1)
}

// FuzzScanTag requires scanTag, with the buffer's index, to end a start
// tag where x/net/html's tokenizer ends its token, and to wait for more
// input exactly when the tokenizer returns no token: the scanner judges
// only the tags it finds, so a tag end of its own would let a page hide a
// kill control in what it reads as an attribute value. Seeds are every
// start tag of the captured Spark pages and attributes in unusual forms.
func FuzzScanTag(f *testing.F) {
	addSparkStartTags(f)
	for _, s := range []string{`<a  class="x">`, `<a class="x"class="y">`, `<a ="x" b="c">`, `<a b=="c">`,
		`<a b/="c">`, `<a b="c"/>`, `<a b='"' c="'">`, `<a b"c="d">`, `<a b='c" d="e>`, "<a \tclass=\"kill\">",
		`<a href="x"href="/kill">`, `<a / class="kill-link">`, `<a class= "kill-link">`, `<a class ="kill-link">`,
		`<a = "x">`, `<a b="c`, `<a b='c>' d=e>`, "<a b=\"c\">\n<a href=\"/kill\">"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b := []byte(in)
		if len(b) < 2 || b[0] != '<' || !isASCIILetter(b[1]) {
			return
		}
		end, ok := scanTagAlone(b)
		z := html.NewTokenizer(bytes.NewReader(b))
		tt := z.Next()
		switch {
		case ok && tt != html.StartTagToken && tt != html.SelfClosingTagToken:
			t.Fatalf("%q: scanTag ends a tag at %d, the tokenizer reads %v %q", b, end, tt, z.Raw())
		case ok && len(z.Raw()) != end:
			t.Fatalf("%q: scanTag ends the tag at %d, the tokenizer at %d", b, end, len(z.Raw()))
		case !ok && tt != html.ErrorToken:
			t.Fatalf("%q: scanTag waits for more, the tokenizer reads %v %q", b, tt, z.Raw())
		}
	})
}

// FuzzRawTag compares rawTag, the fast path's attribute reader, with the
// tokenizer on one start tag: the same token type, the same attributes in
// the same order (keys lower-cased as the stripper compares them) and,
// for the keys the stripper reads, the same values; or rawTag declines
// the tag. Seeds are every start tag of the captured Spark pages.
func FuzzRawTag(f *testing.F) {
	addSparkStartTags(f)
	for _, s := range []string{`<a b=c/>`, `<a b="c"/>`, `<a/b/>`, `<a =b class=kill-link CLASS=x/>`, `<a b = c d= e f =g/ >`,
		`<input name=id value='1' NAME=x>`, `<a href="a&amp;b" class=k>`, "<a\x00 class=\x00>", `<a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b := []byte(in)
		if len(b) < 3 || b[0] != '<' || !isASCIILetter(b[1]) {
			return
		}
		end, ok := scanTagAlone(b)
		if !ok {
			return
		}
		tag := b[:end]
		z := html.NewTokenizer(bytes.NewReader(tag))
		tt := z.Next()
		if len(z.Raw()) != len(tag) {
			return // the fast path hands such a tag to the tokenizer
		}
		var rt rawTag
		if !rt.read(bytes.Clone(tag)) {
			return
		}
		if rt.tt != tt {
			t.Fatalf("%q: rawTag reads a %v, the tokenizer a %v", tag, rt.tt, tt)
		}
		_, zMore := z.TagName()
		_, rMore := rt.TagName()
		if zMore != rMore {
			t.Fatalf("%q: has attributes: rawTag %v, tokenizer %v", tag, rMore, zMore)
		}
		for i := 0; zMore || rMore; i++ {
			var zk, zv, rk, rv []byte
			zk, zv, zMore = z.TagAttr()
			rk, rv, rMore = rt.TagAttr()
			if !bytes.Equal(lowerASCII(rk), rk) && judgedKey(rk) != nil {
				t.Fatalf("%q: attribute %d: rawTag's key %q is not lower-case", tag, i, rk)
			}
			if string(lowerASCII(bytes.ReplaceAll(rk, []byte{0}, []byte("\ufffd")))) != string(zk) || zMore != rMore {
				t.Fatalf("%q: attribute %d: rawTag %q (more %v), tokenizer %q (more %v)", tag, i, rk, rMore, zk, zMore)
			}
			if judgedKey(zk) != nil && string(rv) != string(zv) {
				t.Fatalf("%q: attribute %q: rawTag value %q, tokenizer %q", tag, zk, rv, zv)
			}
		}
	})
}

// lowerASCII returns b with ASCII upper case lowered, as the tokenizer
// lowers keys.
func lowerASCII(b []byte) []byte {
	out := bytes.Clone(b)
	for i, c := range out {
		if 'A' <= c && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return out
}
