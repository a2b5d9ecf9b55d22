//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCrawlerFindsProblems proves the crawler can fail: a small site with one
// problem of each kind the Spark crawls must not have.
func TestCrawlerFindsProblems(t *testing.T) {
	var leakHost string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><head><link rel="stylesheet" href="/static/a.css"></head><body>
				<a href="/ok/">ok</a> <a href="/missing/">missing</a>
				<a href="/jobs/job/kill/?id=1">(kill)</a> <a href="/away/">away</a>
				<a href="/sorted/?t.sort=Job Id">sort</a>
				<a href="http://`+leakHost+`/jobs/">driver</a>
				<a href="https://spark.apache.org/docs/">docs</a>
				<form action="/form/"></form><script src="/static/b.js"></script></body></html>`)
		case "/ok/", "/static/a.css", "/static/b.js", "/form/":
			fmt.Fprint(w, "fine")
		case "/sorted/":
			if strings.Contains(r.URL.RawQuery, " ") {
				http.Error(w, "raw space", http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, "sorted")
		case "/away/":
			http.Redirect(w, r, "http://"+leakHost+"/jobs/", http.StatusFound)
		case "/jobs/job/kill/":
			t.Errorf("crawler fetched a kill endpoint: %s", r.URL)
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	leakHost = "127.0.0.1:1" // a "driver" address other than the site's own

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Crawl(ctx, NoRedirectClient(nil), srv.URL+"/", CrawlOptions{Needles: []string{leakHost}})
	if err != nil {
		t.Fatal(err)
	}
	has := func(ls []Link, sub string) bool {
		for _, l := range ls {
			if strings.Contains(l.URL+" "+l.Why, sub) {
				return true
			}
		}
		return false
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"broken /missing/", has(rep.Broken, "/missing/")},
		{"no broken sort link (space encoded)", !has(rep.Broken, "/sorted/")},
		{"kill link recorded", has(rep.KillLinks, "/jobs/job/kill/")},
		{"leaking redirect", has(rep.Leaks, "redirect leaves the origin")},
		{"leaking link", has(rep.Leaks, "http://"+leakHost+"/jobs/")},
		{"body names the driver", has(rep.Leaks, "body names "+leakHost)},
		{"offsite docs link", has(rep.Offsite, "spark.apache.org")},
		{"stylesheet, script and form fetched", len(rep.Visited) >= 7},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not as expected; report %+v", c.name, rep)
		}
	}
}

// TestCrawlerReportsTruncation proves that a crawl stopped by its page limit
// says so, and one that saw every page does not: requireComplete depends on it.
func TestCrawlerReportsTruncation(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/1/">1</a><a href="/2/">2</a><a href="/3/">3</a><a href="/4/">4</a>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		max  int
		want bool
	}{{3, true}, {5, false}, {50, false}} {
		rep, err := Crawl(ctx, NoRedirectClient(nil), srv.URL+"/", CrawlOptions{MaxPages: c.max})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Truncated != c.want {
			t.Errorf("Crawl(MaxPages=%d).Truncated = %v after %d pages; want %v", c.max, rep.Truncated, rep.Pages, c.want)
		}
	}
}
