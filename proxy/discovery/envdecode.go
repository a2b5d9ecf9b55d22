package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// An environment answer is about 100 KB for a real driver (its Hadoop
// properties and classpath), of which discovery needs two arrays of about
// 2 KB. decodeEnvironment finds their bytes with envArrays, a scan that
// skips every other value without decoding it, and decodes only those two
// with encoding/json: 500 drivers found together and a History Server's
// backlog of 10,000 event logs cost a tenth of decoding every document.
//
// The values it skips are checked for terminated strings and matching
// brackets only, not for well-formed literals and numbers: a driver states
// its own ACLs in its environment, so nothing it could slip past the check
// grants more than valid JSON would. Where the document is valid JSON the
// result is encoding/json's (FuzzDecodeEnvironment): keys match as it
// matches field names (bytes.EqualFold), and the last of repeated keys
// wins.

// envNestMax bounds the nesting of a skipped value, as encoding/json does.
const envNestMax = 10000

var errEnvSyntax = errors.New("environment is not a JSON object")

// decodeEnvironment reads the ACL properties and spark.ui.proxyBase from an
// environment answer; a Spark property wins over a system property.
func decodeEnvironment(body []byte) (map[string]string, string, error) {
	sparkRaw, sysRaw, err := envArrays(body)
	if err != nil {
		return nil, "", err
	}
	var sparkProps, sysProps [][]string
	if sparkRaw != nil {
		if err := json.Unmarshal(sparkRaw, &sparkProps); err != nil {
			return nil, "", err
		}
	}
	if sysRaw != nil {
		if err := json.Unmarshal(sysRaw, &sysProps); err != nil {
			return nil, "", err
		}
	}
	acl := map[string]string{}
	proxyBase := ""
	scan := func(pairs [][]string, sys bool) {
		for _, kv := range pairs {
			if len(kv) != 2 {
				continue
			}
			if kv[0] == "spark.ui.proxyBase" && (proxyBase == "" || !sys) {
				proxyBase = kv[1]
			}
			for _, k := range aclKeys {
				if kv[0] == k {
					if _, set := acl[k]; !set || !sys {
						acl[k] = kv[1]
					}
				}
			}
		}
	}
	scan(sysProps, true)
	scan(sparkProps, false)
	return acl, strings.TrimRight(proxyBase, "/"), nil
}

var (
	keySparkProps  = []byte("sparkProperties")
	keySystemProps = []byte("systemProperties")
)

// envArrays returns the raw values of the top-level keys sparkProperties
// and systemProperties of a JSON object (nil where absent).
func envArrays(b []byte) (spark, system []byte, err error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, errEnvSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return nil, nil, errEnvSyntax
			}
			end, err := skipString(b, i)
			if err != nil {
				return nil, nil, err
			}
			key := b[i+1 : end-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				var k string
				if json.Unmarshal(b[i:end], &k) != nil {
					return nil, nil, errEnvSyntax
				}
				key = []byte(k)
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return nil, nil, errEnvSyntax
			}
			i = skipSpace(b, i+1)
			vend, err := skipValue(b, i)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case bytes.EqualFold(key, keySparkProps):
				spark = b[i:vend]
			case bytes.EqualFold(key, keySystemProps):
				system = b[i:vend]
			}
			i = skipSpace(b, vend)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return nil, nil, errEnvSyntax
		}
	}
	if skipSpace(b, i) != len(b) {
		return nil, nil, errEnvSyntax
	}
	return spark, system, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errEnvSyntax
		}
		j += k
		// An escaped quote follows an odd number of backslashes.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j, nil
		}
	}
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errEnvSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var buf [64]byte
		open := buf[:0] // the closing bracket each open one wants
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				if len(open) == envNestMax {
					return 0, errEnvSyntax
				}
				open = append(open, c+2) // '}' is '{'+2, ']' is '['+2
			case '}', ']':
				if len(open) == 0 || open[len(open)-1] != c {
					return 0, errEnvSyntax
				}
				open = open[:len(open)-1]
				if len(open) == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errEnvSyntax
	default: // a number or literal, up to the next delimiter
		j := i
		for j < len(b) && !bytes.ContainsRune([]byte(",}] \n\r\t"), rune(b[j])) {
			j++
		}
		if j == i {
			return 0, errEnvSyntax
		}
		return j, nil
	}
}
