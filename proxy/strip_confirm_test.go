package proxy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// confirmLinks runs s through a confirm-link reader for prefix whose source
// gives n bytes per Read, reading its output n bytes at a time.
func confirmLinks(t testing.TB, s, prefix string, n int) string {
	t.Helper()
	return readChunked(t, NewConfirmLinkReader(io.NopCloser(&chunkReader{s: s, n: n}), prefix), n)
}

func TestConfirmLinks(t *testing.T) {
	t.Parallel()
	const p = "/app/app-1"
	link := func(path, id string) string {
		return `<a href="` + p + path + `?id=` + id + `" class="kill-link">(kill)</a>`
	}
	killA := `<a href="/app/x/jobs/job/kill/?id=1" onclick="if (window.confirm('Are you sure you want to kill job 1 ?')) { this.parentNode.submit(); return true; } else { return false; }" class="kill-link">(kill)</a>`
	form405 := "<form action=\"/app/x/stages/stage/kill/\" method=\"POST\" style=\"display:inline\">\n" +
		"<input type=\"hidden\" name=\"id\" value=\"12\"/>\n<input type=\"hidden\" name=\"csrfToken\" value=\"5f14\"/>\n" +
		"<a href=\"#\" onclick=\"if (window.confirm('Are you sure you want to kill stage 12 ?')) { this.parentNode.submit(); return true; } else { return false; }\" class=\"kill-link\">(kill)</a>\n</form>"
	tests := []struct {
		name, prefix, in, want string
	}{
		{"spark 3.5 job anchor", p, `<td>` + killA + ` <a href="/app/x/jobs/job/?id=1" class="name-link">count</a></td>`,
			`<td>` + link("/jobs/job/kill/", "1") + ` <a href="/app/x/jobs/job/?id=1" class="name-link">count</a></td>`},
		{"spark 4.0.5 stage form", p, `<div> ` + form405 + "\n<a href=\"/s\">s</a></div>",
			`<div> ` + link("/stages/stage/kill/", "12") + "\n<a href=\"/s\">s</a></div>"},
		{"stage anchor without slash", p, `<a href="stages/stage/kill?id=3&amp;x=1">k</a>.`, link("/stages/stage/kill/", "3") + `.`},
		{"class before href", p, `<a class="kill-link" onclick="x()" href="/jobs/job/kill/?id=4">(kill)</a>`, link("/jobs/job/kill/", "4")},
		{"first id wins", p, `<a href="/jobs/job/kill/?x=1&id=5&id=6">k</a>`, link("/jobs/job/kill/", "5")},
		{"other app's link points here", p, `<a href="/app/other/jobs/job/kill/?id=8">k</a>`, link("/jobs/job/kill/", "8")},
		{"prefix escaped", `/proxy/a"b<c`, `<a href="/jobs/job/kill/?id=1">k</a>`, `<a href="/proxy/a&#34;b&lt;c/jobs/job/kill/?id=1" class="kill-link">(kill)</a>`},
		{"two anchors in a row", p, `<a href="/jobs/job/kill/?id=1">1<a href="/jobs/job/kill/?id=2">2</a>x`,
			link("/jobs/job/kill/", "1") + link("/jobs/job/kill/", "2") + `x`},
		{"ancestor closes anchor", p, `<td><a class="kill-link" href="/jobs/job/kill/?id=1">(kill)</td><td>n</td>`,
			`<td>` + link("/jobs/job/kill/", "1") + `</td><td>n</td>`},
		{"form id after anchor", p, `<form action="/jobs/job/kill/"><a class="kill-link" href="#">(kill)</a><input name="id" value="9"></form>`,
			link("/jobs/job/kill/", "9")},
		// Removed without a link, as in deny mode.
		{"anchor without id", p, `<a href="/jobs/job/kill/">k</a>.`, `.`},
		{"anchor with non-numeric id", p, `<a href="/jobs/job/kill/?id=1%20">k</a>.`, `.`},
		{"anchor with long id", p, `<a href="/jobs/job/kill/?id=12345678901">k</a>.`, `.`},
		{"class only", p, `<a class="kill-link" href="#">(kill)</a>.`, `.`},
		{"escaped kill segment", p, `<a href="/jobs/job/%6Bill/?id=1">k</a>.`, `.`},
		{"upper-case kill segment", p, `<a href="/jobs/job/KILL/?id=1">k</a>.`, `.`},
		{"form without id", p, `<form action="/jobs/job/kill/"><a class="kill-link" href="#">(kill)</a></form>.`, `.`},
		{"form with two ids", p, `<form action="/jobs/job/kill/"><input name="id" value="1"><input name="id" value="2"></form>.`, `.`},
		{"form with bad id", p, `<form action="/jobs/job/kill/"><input name="id" value="1 or 2"></form>.`, `.`},
		{"form id inside nested form", p, `<form action="/jobs/job/kill/"><form><input name="id" value="3"></form>.`, link("/jobs/job/kill/", "3") + `.`},
		{"master app form", p, `<form action="app/kill/" method="POST"><input type="hidden" name="id" value="1"/><a href="#" class="kill-link">(kill)</a></form>ok`, `ok`},
		{"hold link", p, `<a href="/jobs/hold/?id=1">h</a>.`, `.`},
		{"button formaction", p, `<button formaction="/jobs/job/kill/?id=1">k</button>.`, `.`},
		{"unclosed at EOF", p, `before<a href="/jobs/job/kill/?id=1">(kill)`, `before`},
		{"script untouched", p, `<script>'<a href="/jobs/job/kill/?id=1">'</script>`, `<script>'<a href="/jobs/job/kill/?id=1">'</script>`},
		{"no kill control", p, `<DIV  Class=x >&amp;<a href="/jobs/job/?id=1">j</a></Div >`, `<DIV  Class=x >&amp;<a href="/jobs/job/?id=1">j</a></Div >`},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 3, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%s/chunk%d", tt.name, n), func(t *testing.T) {
				if got := confirmLinks(t, tt.in, tt.prefix, n); got != tt.want {
					t.Errorf("confirmLinks(%q, %q) = %q; want %q", tt.in, tt.prefix, got, tt.want)
				}
			})
		}
	}
}

// TestConfirmLinkGolden rewrites the real Spark pages for a user who may
// kill: each job or stage kill control (3.5.9's anchor, 4.0.5's POST form)
// becomes a plain confirmation link with the same id, and the rest of the
// page is byte for byte the input, as an independent regexp rewrite says.
// Pages without such a control come out as the stripper makes them.
func TestConfirmLinkGolden(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("testdata/spark-*.html")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no testdata pages: %v", err)
	}
	uiRoot := regexp.MustCompile(`setUIRoot\('([^']*)'\)`)
	anchor35 := regexp.MustCompile(`<a href="[^"]*/(jobs/job|stages/stage)/kill/\?id=(\d+)" onclick="[^"]*" class="kill-link">\(kill\)</a>`)
	form405 := regexp.MustCompile(`(?s)<form action="[^"]*/(jobs/job|stages/stage)/kill/" method="POST"[^>]*>\s*<input type="hidden" name="id" value="(\d+)"/>.*?</form>`)
	killAnchor := regexp.MustCompile(`(?s)<a [^>]*class="kill-link"[^>]*>.*?</a>`)
	killForm := regexp.MustCompile(`(?s)<form [^>]*action="[^"]*/kill/"[^>]*>.*?</form>`)
	links := 0
	for _, page := range pages {
		t.Run(filepath.Base(page), func(t *testing.T) {
			inB, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			in := string(inB)
			prefix := "/app/none"
			if m := uiRoot.FindStringSubmatch(in); m != nil {
				prefix = m[1]
			}
			got := confirmLinks(t, in, prefix, 4096)
			want := fmt.Sprintf(`<a href="%s/$1/kill/?id=$2" class="kill-link">(kill)</a>`, prefix)
			ind := form405.ReplaceAllString(in, want)
			ind = anchor35.ReplaceAllString(ind, want)
			n := len(anchor35.FindAllString(in, -1)) + len(form405.FindAllString(in, -1))
			// Every other kill control is removed.
			ind = killForm.ReplaceAllStringFunc(ind, func(string) string { return "" })
			ind = killAnchor.ReplaceAllStringFunc(ind, func(s string) string {
				if strings.HasPrefix(s, `<a href="`+prefix+`/`) && !strings.Contains(s, "onclick") {
					return s // a confirmation link made above
				}
				return ""
			})
			if got != ind {
				t.Errorf("confirmLinks(%s) is not the input with its kill controls made confirmation links", page)
			}
			if c := strings.Count(got, `class="kill-link">(kill)</a>`); c != n || strings.Contains(got, "onclick=\"if (window.confirm") || strings.Contains(got, "csrfToken") {
				t.Errorf("confirmLinks(%s) has %d confirmation links (want %d), or a Spark kill control", page, c, n)
			}
			if n == 0 {
				if s := strip(t, in, 4096); got != s {
					t.Errorf("confirmLinks(%s) differs from strip for a page without job or stage kill controls", page)
				}
				return
			}
			links += n
			if golden := strings.TrimSuffix(page, ".html") + ".confirm.golden"; got != readGolden(t, golden, got) {
				t.Errorf("confirmLinks(%s) differs from %s", page, golden)
			}
		})
	}
	t.Run("some pages have kill controls", func(t *testing.T) {
		if links < 8 {
			t.Errorf("the pages have %d job or stage kill controls; want one on each jobs, stages, job and pool page", links)
		}
	})
}

var confirmLinkTag = regexp.MustCompile(`^<a href="/app/a/(jobs/job|stages/stage)/kill/\?id=[0-9]{1,10}" class="kill-link">$`)

func FuzzConfirmLinks(f *testing.F) {
	for _, s := range []string{
		`<td><a href="/jobs/job/kill/?id=1" class="kill-link">(kill)</a><a href="/x">x</a></td>`,
		`<form action="/stages/stage/kill/"><input name="id" value="3"><a href="#" class="kill-link">(kill)</a></form>`,
		`<form action="app/kill/"><a href="#" class="kill-link">(kill)</a></form>`,
		`<a href="/jobs/job/kill/?id=1"><a href="/stages/stage/kill?id=2">`,
		`<p>plain <b>page</b></p>`,
	} {
		f.Add(s, uint8(7))
	}
	f.Fuzz(func(t *testing.T, in string, chunk uint8) {
		n := int(chunk)%64 + 1
		got := confirmLinks(t, in, "/app/a", n)
		if whole := confirmLinks(t, in, "/app/a", len(in)+1); got != whole {
			t.Fatalf("confirmLinks(%q) depends on chunking: %q vs %q", in, got, whole)
		}
		// The only kill controls left are confirmation links, exactly.
		z := html.NewTokenizer(strings.NewReader(got))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			raw := string(z.Raw())
			name := string(lowerName(nil, z.Raw()[1:]))
			if isControlCandidate([]byte(name)) && isKillControl(z, name) && !confirmLinkTag.MatchString(raw) {
				t.Fatalf("confirmLinks(%q) = %q keeps kill control %q", in, got, raw)
			}
		}
		if !hasKillControl(in) && got != in {
			t.Fatalf("confirmLinks(%q) = %q; input has no kill control", in, got)
		}
	})
}
