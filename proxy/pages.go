package proxy

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// pages holds the gateway's own page templates, each parsed with the
// shared layout.
type pages struct {
	byName map[string]*template.Template
}

var pageNames = []string{"index", "error", "killconfirm", "diagnosis", "byname", "execlog", "podlog"}

func newPages() (*pages, error) {
	funcs := template.FuncMap{"join": strings.Join}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(webFS, "web/templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("proxy: parsing layout: %w", err)
	}
	p := &pages{byName: make(map[string]*template.Template, len(pageNames))}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(webFS, "web/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("proxy: parsing %s page: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// pageBase is what the layout reads.
type pageBase struct {
	Title     string
	User      string
	Groups    []string
	Refresh   int // seconds; 0 for none
	RequestID string
}

// page is the frame of a gateway page for st's request. On an app's own
// host it names no user: the driver's script shares that origin, could
// fetch the page and would learn every viewer's name and groups, which
// the gateway sends no driver; sign-out is the main origin's anyway.
func (st *reqState) page(title string, refresh int) pageBase {
	b := pageBase{Title: title, Refresh: refresh, RequestID: st.requestID}
	if !st.onAppHost {
		b.User, b.Groups = st.ident.User, st.ident.Groups
	}
	return b
}

// render executes a page into a buffer first (pages are small), so that a
// template failure is a clean 500 rather than half a page.
func (p *pages) render(w http.ResponseWriter, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := p.byName[name].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		return fmt.Errorf("rendering %s page: %w", name, err)
	}
	h := w.Header()
	setPageHeaders(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()) // a write error means the client has gone
	return nil
}

// staticHandler serves the gateway's CSS and JS under /_/static/.
func staticHandler() http.Handler {
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	files := http.StripPrefix("/_/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

// errorPage is the data of the error template.
type errorPage struct {
	pageBase
	Status     int
	StatusText string
	Msg        string
	AppID      string
	Reasons    []string
	Grant      string
	Ask        []string
	JudgedUser string
	JudgedGrps []string
	Allow      string
}

// errorJSON is the body of an error for API clients.
type errorJSON struct {
	Error     string   `json:"error"`
	Status    int      `json:"status"`
	AppID     string   `json:"app_id"`
	Reasons   []string `json:"reasons,omitempty"`
	Grant     string   `json:"grant,omitempty"`
	Ask       []string `json:"ask,omitempty"`
	RequestID string   `json:"request_id,omitempty"`
}

// writeError is the one place where a handler's error becomes a response:
// the cause goes to the log, the safe message to the client, as an HTML
// page or as JSON for API clients.
func (s *Server) writeError(w http.ResponseWriter, _ *http.Request, st *reqState, err error) {
	he := asHTTPError(err)
	if he.AppID == "" {
		he.AppID = st.route.AppID
	}
	lvl := zap.DebugLevel
	if he.Status >= 500 {
		lvl = zap.WarnLevel
	}
	if ce := s.log.Check(lvl, "request failed"); ce != nil {
		upstream := ""
		if st.upstream != nil {
			upstream = st.upstream.base.Redacted()
		}
		ce.Write(zap.String("request_id", st.requestID), zap.Int("status", he.Status),
			zap.String("app_id", he.AppID), zap.String("user", st.ident.User),
			zap.String("upstream", upstream), zap.String("msg", he.Msg), zap.Error(he.Cause))
	}
	h := w.Header()
	if he.Allow != "" {
		h.Set("Allow", he.Allow)
	}
	if he.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(he.RetryAfter))
	}
	if st.json {
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(he.Status)
		_ = json.NewEncoder(w).Encode(errorJSON{
			Error: he.Msg, Status: he.Status, AppID: he.AppID,
			Reasons: he.Reasons, Grant: he.Grant, Ask: he.Ask, RequestID: st.requestID,
		})
		return
	}
	title := he.Title
	if title == "" {
		title = http.StatusText(he.Status)
	}
	data := errorPage{
		pageBase:   st.page(title, he.RetryAfter),
		Status:     he.Status,
		StatusText: http.StatusText(he.Status),
		Msg:        he.Msg,
		AppID:      he.AppID,
		Reasons:    he.Reasons,
		Grant:      he.Grant,
		Ask:        he.Ask,
		JudgedUser: he.User,
		JudgedGrps: he.Groups,
		Allow:      he.Allow,
	}
	if rerr := s.pages.render(w, he.Status, "error", data); rerr != nil {
		s.log.Error("error page failed", zap.String("request_id", st.requestID), zap.Error(rerr))
		http.Error(w, he.Msg, he.Status)
	}
}
