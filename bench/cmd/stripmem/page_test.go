package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestPageSize(t *testing.T) {
	for _, size := range []int64{0, 100, 5000, 3 << 20} {
		var buf bytes.Buffer
		n, err := io.Copy(&buf, newPage(size))
		if err != nil {
			t.Fatal(err)
		}
		if want := max(size, int64(len(pageHead)+len(pageFoot))); n != want {
			t.Errorf("newPage(%d) gave %d bytes; want %d", size, n, want)
		}
		if !strings.HasSuffix(buf.String(), pageFoot) {
			t.Errorf("newPage(%d) does not end with the foot", size)
		}
	}
}

func TestKillCounterAcrossWrites(t *testing.T) {
	text := "x kill-link y kill-linkkill-link z <a class=kill-link>"
	for _, chunk := range []int{1, 2, 3, 5, 8, 9, 100} {
		k := &killCounter{}
		for s := text; s != ""; {
			n := min(chunk, len(s))
			_, _ = k.Write([]byte(s[:n]))
			s = s[n:]
		}
		if k.kills != 4 || k.n != int64(len(text)) {
			t.Errorf("chunks of %d: kills %d, bytes %d; want 4, %d", chunk, k.kills, k.n, len(text))
		}
	}
}
