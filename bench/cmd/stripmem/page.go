package main

import (
	"fmt"
	"io"
)

// sampleEvery is how many input bytes pass between two memory samples.
const sampleEvery = 256 << 10

// page generates a Spark 3.5-like jobs page of exactly size bytes: the
// head of a driver page, then job rows with description links and kill
// links, with an inline timeline <script> of about 64 KiB every 200 rows,
// whitespace to make up the size, then the closing tags. The rows come from
// one block of about 1 MiB built up front and repeated whole, so that
// reading allocates nothing and the plain copy is a fair baseline; the
// block is allocated before either measurement starts. sample is called
// every sampleEvery bytes.
type page struct {
	parts       [][]byte // head, block, padding, foot
	repeat      []int    // how many times each part is sent
	part, off   int
	n           int64
	sample      func()
	sinceSample int64
}

func newPage(size int64) *page {
	var block []byte
	for i := 0; i < 200; i++ {
		block = appendRow(block, i)
	}
	body := size - int64(len(pageHead)) - int64(len(pageFoot))
	if body < 0 {
		body = 0
	}
	blocks := body / int64(len(block))
	pad := make([]byte, body-blocks*int64(len(block)))
	for i := range pad {
		pad[i] = ' '
	}
	return &page{
		parts:  [][]byte{[]byte(pageHead), block, pad, []byte(pageFoot)},
		repeat: []int{1, int(blocks), 1, 1},
		sample: func() {},
	}
}

const pageHead = `<!DOCTYPE html><html><head>
<meta http-equiv="Content-type" content="text/html; charset=utf-8"/><meta name="viewport" content="width=device-width, initial-scale=1"/>
<link rel="stylesheet" href="/static/bootstrap.min.css" type="text/css"/><link rel="stylesheet" href="/static/webui.css" type="text/css"/>
<script src="/static/sorttable.js"></script><script src="/static/jquery-3.5.1.min.js"></script><script src="/static/vis-timeline-graph2d.min.js"></script>
<script src="/static/webui.js"></script><script>setUIRoot('')</script><title>bench - Spark Jobs</title></head><body>
<nav class="navbar navbar-expand-md navbar-light bg-light mb-4"><div class="navbar-header"><div class="navbar-brand"><a href="/"><img src="/static/spark-logo-77x50px-hd.png"/><span class="version">3.5.9</span></a></div></div>
<ul class="navbar-nav mr-auto"><li class="nav-item active"><a class="nav-link" href="/jobs/">Jobs</a></li><li class="nav-item"><a class="nav-link" href="/stages/">Stages</a></li></ul></nav>
<div class="container-fluid"><span class="collapse-aggregated-activeJobs collapse-table" onClick="collapseTable('collapse-aggregated-activeJobs','aggregated-activeJobs')"><h4>Active Jobs</h4></span>
<div class="aggregated-activeJobs collapsible-table"><table class="table table-bordered table-sm table-striped table-head-clickable table-cell-width-limited" id="activeJob-table"><thead><tr><th>Job Id</th><th>Description</th><th>Submitted</th><th>Duration</th><th>Stages</th><th>Tasks</th></tr></thead><tbody>
`

const pageFoot = "</tbody></table></div></div></body></html>\n"

func appendRow(b []byte, i int) []byte {
	if i%200 == 199 {
		b = append(b, "<script type=\"text/javascript\">drawApplicationTimeline(["...)
		for j, n0 := 0, len(b); len(b)-n0 < 64<<10; j++ {
			b = fmt.Appendf(b, `{"className":"job application-timeline-object succeeded","group":"jobs","start":%d,"end":%d,"content":"<div class=\"application-timeline-content\" data-html=\"true\" data-placement=\"top\" data-toggle=\"tooltip\" data-title=\"count at bench.py:%d (Job %d)<br>Status: SUCCEEDED\">count at bench.py:%d (Job %d)</div>"},`, 1700000000000+j, 1700000001000+j, j, j, j, j)
		}
		return append(b, "],[],1700000000000,0);</script>\n"...)
	}
	return fmt.Appendf(b, `<tr id="job-%[1]d"><td>%[1]d</td><td><span class="description-input">bench job %[1]d</span>
<a href="/jobs/job/kill/?id=%[1]d" class="kill-link" onclick="if (window.confirm('Are you sure you want to kill job %[1]d ?')) { this.parentNode.submit(); return true; } else { return false; }">(kill)</a>
<a href="/jobs/job/?id=%[1]d" class="name-link">count at bench.py:%[1]d</a></td><td sorttable_customkey="1700000000000">2026/11/29 14:06:33</td><td sorttable_customkey="1234">1 s</td><td>1/2</td>
<td><div class="progress"><span style="text-align:center; position:absolute; width:100%%;">3/8 (1 running)</span><div class="progress-bar progress-completed" style="width: 37.5%%"></div><div class="progress-bar progress-started" style="width: 12.5%%"></div></div></td></tr>
`, i)
}

// Read copies the next bytes of the page into b.
func (p *page) Read(b []byte) (int, error) {
	for p.part < len(p.parts) && (p.repeat[p.part] == 0 || len(p.parts[p.part]) == 0) {
		p.part++
	}
	if p.part == len(p.parts) {
		return 0, io.EOF
	}
	n := copy(b, p.parts[p.part][p.off:])
	p.off += n
	if p.off == len(p.parts[p.part]) {
		p.off = 0
		p.repeat[p.part]--
	}
	p.n += int64(n)
	p.sinceSample += int64(n)
	if p.sinceSample >= sampleEvery {
		p.sinceSample = 0
		p.sample()
	}
	return n, nil
}
